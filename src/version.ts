/** The product version: the CLI's `--version`, the MCP server and client identity, the store's product_version. */
export const version = "2.4.0"
