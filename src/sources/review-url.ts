import type { GatewayConfig } from "../config/schema.js"

/**
 * Where a security reviewer opens a proposal: the sign-in for the security role on the public listener,
 * naming the proposal (docs/tool-sources.md, "Review").
 */
export const reviewUrl = (config: GatewayConfig, proposalId: string): string => {
  const url = new URL("/auth/login", new URL(config.server.public_url).origin)
  url.searchParams.set("role", "security")
  url.searchParams.set("proposal", proposalId)
  return url.toString()
}
