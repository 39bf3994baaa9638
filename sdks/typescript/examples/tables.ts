// A table made, a row written and the table read back with the TypeScript client.
//   PATCHBAY_URL=http://127.0.0.1:8080 PATCHBAY_API_KEY=pb_... node dist/examples/tables.js
import { createPatchbayClient, type Schema } from "../src/index.js";

const patchbay = createPatchbayClient({ baseUrl: process.env.PATCHBAY_URL!, apiKey: process.env.PATCHBAY_API_KEY! });

const created = await patchbay.POST("/connect/v1/tables", {
  body: { name: "Customers", columns: [{ name: "email", type: "text" }, { name: "plan", type: "text" }] },
});
if (created.error) throw new Error(`could not create the table: ${JSON.stringify(created.error)}`);
const table: Schema<"TableOut"> = created.data;

await patchbay.POST("/connect/v1/tables/{slug}/rows", {
  params: { path: { slug: table.slug } },
  body: { data: { email: "ada@example.com", plan: "pro" } },
});

const { data: rows } = await patchbay.GET("/connect/v1/tables/{slug}/rows", { params: { path: { slug: table.slug } } });
console.log(JSON.stringify({ slug: table.slug, columns: table.columns.map((column) => column.name), total: rows?.total, first: rows?.data[0]?.data }));
