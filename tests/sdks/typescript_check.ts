// Compiled beside the TypeScript client's example by tests/sdks/test_typescript_sdk.py: the
// answers are typed from the document (a property it does not have, or a wrong body, does not
// compile), and they are what the server says.
import { createPatchbayClient, type Schema } from "../src/index.js";

const patchbay = createPatchbayClient({ baseUrl: process.env.PATCHBAY_URL!, apiKey: process.env.PATCHBAY_API_KEY! });

const created = await patchbay.POST("/connect/v1/tables", { body: { name: "Typed in TypeScript" } });
if (!created.data) throw new Error(JSON.stringify(created.error));
const table: Schema<"TableOut"> = created.data;
const slug: string = table.slug;
// @ts-expect-error: TableOut has no such property
table.noSuchProperty;
// @ts-expect-error: a column's type is one of the documented ones
await patchbay.POST("/connect/v1/tables", { body: { name: "Wrong", columns: [{ name: "x", type: "colour" }] } });

const provider = await patchbay.GET("/connect/v1/providers/{providerType}", { params: { path: { providerType: "github" } } });
const name: string | undefined = provider.data?.name;

const duplicate = await patchbay.POST("/connect/v1/tables", { body: { name: "Typed in TypeScript", slug } });
const refusal: Schema<"Error"> | undefined = duplicate.error;

const anonymous = createPatchbayClient({ baseUrl: process.env.PATCHBAY_URL! });
const unauthorized = await anonymous.GET("/connect/v1/tables");

console.log(
  JSON.stringify({ slug, provider: name, duplicate: [duplicate.response.status, refusal?.statusCode], anonymous: unauthorized.response.status }),
);
