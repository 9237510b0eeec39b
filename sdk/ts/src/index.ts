// @dataimport/sdk: the data-import API's TypeScript client.
export * from "./client";
export * from "./webhook";
export type { components, operations, paths } from "./schema";
