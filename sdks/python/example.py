"""A table made, a row written and the rows read back with the Python client.

PATCHBAY_URL=http://127.0.0.1:8080 PATCHBAY_API_KEY=pb_... python sdks/python/example.py
"""

import json
import os

from patchbay_client import AuthenticatedClient
from patchbay_client.api.tables import get_list_rows, post_create_row, post_create_table
from patchbay_client.models import ColumnDef, ColumnDefType, CreateTableDto, Error, RowDto, RowDtoData, TableOut

# an API key goes in x-api-key, as it is (an access token: token=<token>, the default Bearer prefix and header)
client = AuthenticatedClient(base_url=os.environ["PATCHBAY_URL"], token=os.environ["PATCHBAY_API_KEY"], prefix="", auth_header_name="x-api-key")

with client:
    columns = [ColumnDef(name="email", type_=ColumnDefType.TEXT), ColumnDef(name="plan", type_=ColumnDefType.TEXT)]
    table = post_create_table.sync(client=client, body=CreateTableDto(name="Customers", columns=columns))
    if isinstance(table, Error):  # a 4XX answer is the Error model: statusCode and message
        raise SystemExit(f"could not create the table: {table.status_code} {table.message}")
    assert isinstance(table, TableOut)

    row = RowDto(data=RowDtoData.from_dict({"email": "ada@example.com", "plan": "pro"}))
    post_create_row.sync(table.slug, client=client, body=row)

    rows = get_list_rows.sync(table.slug, client=client)
    print(json.dumps({"slug": table.slug, "columns": [column.name for column in table.columns], "total": rows.total, "first": rows.data[0].data.to_dict()}))
