"""Declared GraphQL requests against a real GraphQL server (graphql-core executing a schema behind
the local provider API): the document and the variables built from the inputs, the output read from
``data``, cursor paging through a variable, and errors in a 200 answer raised with their message."""

from __future__ import annotations

import json
import textwrap

import pytest
from graphql import build_schema, graphql_sync

from patchbay.core.declared.loader import parse
from patchbay.core.declared.objects import actions_of
from patchbay.core.declared.runner import ProviderFailed

SCHEMA = build_schema(
    """
    input IssueInput { teamId: String!, title: String!, priority: Int }
    type Issue { id: ID!, title: String!, priority: Int }
    type IssuePayload { success: Boolean!, issue: Issue }
    type PageInfo { hasNextPage: Boolean!, endCursor: String }
    type IssueConnection { nodes: [Issue!]!, pageInfo: PageInfo! }
    type Query { issue(id: ID!): Issue, issues(first: Int!, after: String): IssueConnection! }
    type Mutation { issueCreate(input: IssueInput!): IssuePayload! }
    """
)
ISSUES = [{"id": f"I{number}", "title": f"Issue {number}", "priority": None} for number in range(1, 6)]


class Root:
    def issue(self, info, id):
        found = next((issue for issue in ISSUES if issue["id"] == id), None)
        if found is None:
            raise LookupError(f"Entity not found: {id}")
        return found

    def issues(self, info, first, after=None):
        start = 0 if after is None else int(after)
        page = ISSUES[start : start + first]
        more = start + first < len(ISSUES)
        return {"nodes": page, "pageInfo": {"hasNextPage": more, "endCursor": str(start + first) if more else None}}

    def issueCreate(self, info, input):  # noqa: N802 (the schema's name)
        return {"success": True, "issue": {"id": "I9", "title": input["title"], "priority": input.get("priority")}}


DECLARATION = textwrap.dedent(
    """
    provider = "github"

    [[actions]]
    name = "create_issue"
    title = "Create issue"
    docs = "https://docs.acme.test/graphql#issueCreate"
    input = { type = "object", required = ["team", "title"], properties = { team = { type = "string" }, title = { type = "string" }, priority = { type = "integer" } } }
    example = { team = "T1", title = "Bug" }
    request = { method = "POST", path = "/graphql", graphql = { document = "mutation Create($input: IssueInput!) { issueCreate(input: $input) { success issue { id title priority } } }", variables = { "input.teamId" = "team", "input.title" = "title", "input.priority" = "priority" } } }
    output = { select = "issueCreate.issue" }
    sample = { data = { issueCreate = { success = true, issue = { id = "I9", title = "Bug" } } } }

    [[actions]]
    name = "get_issue"
    title = "Get issue"
    docs = "https://docs.acme.test/graphql#issue"
    input = { type = "object", required = ["id"], properties = { id = { type = "string" } } }
    example = { id = "I1" }
    request = { method = "POST", path = "/graphql", graphql = { document = "query Get($id: ID!) { issue(id: $id) { id title } }", variables = { id = "id" } } }
    output = { select = "issue" }
    sample = { data = { issue = { id = "I1", title = "Issue 1" } } }

    [[actions]]
    name = "list_issues"
    title = "List issues"
    docs = "https://docs.acme.test/graphql#issues"
    input = { type = "object" }
    example = {}
    request = { method = "POST", path = "/graphql", graphql = { document = "query List($first: Int!, $after: String) { issues(first: $first, after: $after) { nodes { id } pageInfo { hasNextPage endCursor } } }", fixed_variables = { first = 2 } } }
    output = { select = "issues.nodes" }
    pagination = { style = "cursor", next_cursor = "issues.pageInfo.endCursor", cursor_body = "variables.after" }
    sample = { data = { issues = { nodes = [{ id = "I1" }], pageInfo = { hasNextPage = false } } } }
    """
)


def serve_graphql(seen):
    request = json.loads(seen.body)
    result = graphql_sync(SCHEMA, request["query"], root_value=Root(), variable_values=request.get("variables"))
    return 200, result.formatted


@pytest.fixture
async def harness(pack_harness):
    harness = await pack_harness("github")
    harness.fake.routes[("POST", "/graphql")] = serve_graphql
    return harness


@pytest.fixture
def actions():
    return {action.name: action for action in actions_of(parse(DECLARATION, "test"))}


async def test_the_document_and_its_variables_are_sent_and_the_output_read_from_data(harness, actions):
    result = await actions["create_issue"].run(await harness.client(), {"team": "T1", "title": "Bug"})
    assert result == {"id": "I9", "title": "Bug", "priority": None}
    sent = json.loads(harness.fake.seen[-1].body)
    assert sent == {
        "query": "mutation Create($input: IssueInput!) { issueCreate(input: $input) { success issue { id title priority } } }",
        "variables": {"input": {"teamId": "T1", "title": "Bug"}},
    }
    assert harness.fake.seen[-1].headers["Content-Type"] == "application/json"


async def test_cursor_paging_through_a_variable(harness, actions):
    assert await actions["list_issues"].run(await harness.client(), {}) == [{"id": f"I{number}"} for number in range(1, 6)]
    assert [json.loads(seen.body)["variables"] for seen in harness.fake.seen] == [{"first": 2}, {"first": 2, "after": "2"}, {"first": 2, "after": "4"}]


async def test_errors_in_a_200_answer_are_upstream_failures_with_their_message(harness, actions):
    with pytest.raises(ProviderFailed, match=r"POST /graphql answered GraphQL errors: Entity not found: I404") as caught:
        await actions["get_issue"].run(await harness.client(), {"id": "I404"})
    assert caught.value.status == 200 and caught.value.body["data"] == {"issue": None}


async def test_a_document_the_server_refuses_is_an_upstream_failure(harness, actions):
    harness.fake.routes[("POST", "/graphql")] = lambda seen: (200, graphql_sync(SCHEMA, "query { nothing }").formatted)
    with pytest.raises(ProviderFailed, match=r"Cannot query field 'nothing' on type 'Query'"):
        await actions["get_issue"].run(await harness.client(), {"id": "I1"})


async def test_an_answer_that_is_no_graphql_response_is_an_upstream_failure(harness, actions):
    harness.fake.routes[("POST", "/graphql")] = (200, ["not", "graphql"])
    with pytest.raises(ProviderFailed, match="the answer is not a GraphQL response"):
        await actions["get_issue"].run(await harness.client(), {"id": "I1"})
