"""The declarative base, column types shared by every model, and tenant scoping.

Tenant scoping lives here, in one place (:func:`guard_tenancy`, which each ``Database`` applies to
its own session class): a session opened for a workspace
(``Database.session(tenant=...)``) adds ``workspace_id = <tenant>`` to every ORM query of a
:class:`TenantScoped` model, loads included, and stamps the tenant on every new row; writing a row of
another tenant raises. A handler cannot forget the filter because it never writes it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, ClassVar

from sqlalchemy import JSON, DateTime, ForeignKey, MetaData, String, Table, event
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import DeclarativeBase, Mapped, ORMExecuteState, Session, declared_attr, mapped_column, with_loader_criteria
from sqlalchemy.sql import visitors
from sqlalchemy.sql.selectable import Alias, Join, Select
from sqlalchemy.types import TypeDecorator

from patchbay.core.timeutil import new_id, utcnow

NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

JsonType = JSON().with_variant(JSONB(), "postgresql")


class UtcDateTime(TypeDecorator):
    """A timestamp stored in UTC and always read back timezone-aware (SQLite keeps no zone)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime; use patchbay.core.timeutil.utcnow()")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)
    type_annotation_map = {datetime: UtcDateTime(), dict[str, Any]: JsonType, list[Any]: JsonType}


class IdMixin:
    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)


class TimestampMixin:
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class TenantScoped:
    """Rows that belong to one workspace. Queries through a tenant session see only that tenant's.

    ``workspace_id`` has an index of its own unless the table sets ``own_workspace_index = False``,
    which it does when one of its composite indexes or unique constraints leads with
    ``workspace_id``: that index serves the same lookups (the tenant's queries, the cascade of a
    deleted workspace), and a second one would only be written on every insert."""

    own_workspace_index: ClassVar[bool] = True

    @declared_attr
    def workspace_id(cls) -> Mapped[str]:
        return mapped_column(String(36), ForeignKey("workspaces.id", ondelete="CASCADE"), index=cls.own_workspace_index)


class CrossTenantWrite(RuntimeError):
    """A tenant session tried to write a row of another workspace."""


TENANT_KEY = "tenant_id"


class CoreTenantQuery(RuntimeError):
    """A tenant session ran a Core query on a tenant-scoped table that it cannot scope (the table
    inside a subquery or CTE): query the model instead, or use a session without a tenant."""


def _tenant_table_names() -> frozenset[str]:
    return frozenset(m.local_table.name for m in Base.registry.mappers if issubclass(m.class_, TenantScoped))


def _core_tenant_tables(statement: Any) -> list[Table | Alias]:
    """The tenant-scoped tables a statement names only as plain Core tables (``Model.__table__``, or
    an alias of one); a table also named through its model is scoped by ``with_loader_criteria``."""
    names = _tenant_table_names()
    elements = list(visitors.iterate(statement))
    through_models = {entity.mapper.local_table.name for e in elements if (entity := e._annotations.get("parententity")) is not None}
    found: list[Table | Alias] = []
    for element in elements:
        table = element.element if isinstance(element, Alias) else element
        if isinstance(table, Table) and table.name in names and table.name not in through_models and element not in found:
            found.append(element)
    return found


def _joined_tables(froms: Any) -> list[Any]:
    """The tables and aliases of FROM clauses, looking into joins but not into subqueries."""
    found: list[Any] = []
    for clause in froms:
        if isinstance(clause, Join):
            found += _joined_tables([clause.left, clause.right])
        else:
            found.append(clause)
    return found


def _scope_core_statement(statement: Any, tenant: str) -> Any:
    """``statement`` with ``workspace_id = tenant`` on each Core tenant table it reads or changes."""
    core_tables = _core_tenant_tables(statement)
    if not core_tables:
        return statement
    froms = _joined_tables(statement.get_final_froms() if isinstance(statement, Select) else [statement.table])
    direct = {id(f) for f in froms}
    aliased = {id(f.element) for f in froms if isinstance(f, Alias)}
    for table in core_tables:
        if id(table) in aliased and id(table) not in direct:
            continue  # the table under a direct alias: the alias is scoped
        if id(table) not in direct:
            raise CoreTenantQuery(f"Core query on tenant-scoped table {table.name} inside a subquery in a tenant session")
        statement = statement.where(table.c.workspace_id == tenant)
    return statement


def guard_tenancy(session_class: type[Session]) -> None:
    """Scope the tenant sessions of ``session_class`` (a Database's own ``Session`` subclass, never
    the global one): reads see only the tenant's rows, writes are stamped and checked."""
    event.listen(session_class, "do_orm_execute", _scope_queries_to_tenant)
    event.listen(session_class, "before_flush", _stamp_tenant_on_writes)


def _scope_queries_to_tenant(state: ORMExecuteState) -> None:
    """In a tenant session, every SELECT, UPDATE and DELETE sees only the tenant's rows: ORM entities
    through ``with_loader_criteria``, plain Core tables (``Model.__table__``) by an added WHERE."""
    tenant = state.session.info.get(TENANT_KEY)
    if tenant is None:
        return
    if state.is_select or state.is_update or state.is_delete:
        statement = _scope_core_statement(state.statement, tenant)
        state.statement = statement.options(
            with_loader_criteria(TenantScoped, lambda cls: cls.workspace_id == tenant, include_aliases=True, track_closure_variables=False)
        )


def _stamp_tenant_on_writes(session: Session, flush_context, instances) -> None:
    tenant = session.info.get(TENANT_KEY)
    if tenant is None:
        return
    for obj in list(session.new) + list(session.dirty) + list(session.deleted):
        if not isinstance(obj, TenantScoped):
            continue
        if obj.workspace_id is None and obj in session.new:
            obj.workspace_id = tenant
        elif obj.workspace_id != tenant:
            raise CrossTenantWrite(f"{type(obj).__name__} of another workspace")
