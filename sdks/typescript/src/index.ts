/**
 * patchbay's API, typed: `paths` and `components` are generated from the service's OpenAPI
 * document (`src/schema.d.ts`, written by `sdks/generate`), and openapi-fetch makes the requests.
 *
 *     const patchbay = createPatchbayClient({ baseUrl: "https://patchbay.example.com", apiKey });
 *     const { data, error } = await patchbay.GET("/connect/v1/tables");
 */
import createClient, { type Client, type ClientOptions } from "openapi-fetch";

import type { components, operations, paths } from "./schema.js";

export type { components, operations, paths };
/** A schema of the document by name: `Schema<"TableOut">`. */
export type Schema<Name extends keyof components["schemas"]> = components["schemas"][Name];
export type PatchbayClient = Client<paths>;

export interface PatchbayClientOptions extends Omit<ClientOptions, "baseUrl"> {
  /** Where patchbay answers, e.g. `https://patchbay.example.com` (no trailing path). */
  baseUrl: string;
  /** A workspace API key (`patchbay api-keys create`), sent as `x-api-key`. */
  apiKey?: string;
  /** Or an access token of patchbay's identity provider, sent as `Authorization: Bearer`. */
  accessToken?: string;
}

export function createPatchbayClient({ baseUrl, apiKey, accessToken, headers, ...options }: PatchbayClientOptions): PatchbayClient {
  const credentials: Record<string, string> = {};
  if (apiKey) credentials["x-api-key"] = apiKey;
  if (accessToken) credentials["authorization"] = `Bearer ${accessToken}`;
  return createClient<paths>({ ...options, baseUrl: baseUrl.replace(/\/+$/, ""), headers: { ...credentials, ...(headers as Record<string, string>) } });
}
