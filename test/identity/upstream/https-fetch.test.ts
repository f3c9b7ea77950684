/**
 * docs/enterprise-sign-in.md, "Discovery and transport" — the upstream transport verifies certificates
 * always: not even NODE_TLS_REJECT_UNAUTHORIZED=0 in the environment turns it off.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { upstreamFetch } from "../../../src/identity/upstream/https-fetch.js"
import { type ScriptedUpstream, startScriptedUpstream } from "../../support/scripted-upstream.js"

let upstream: ScriptedUpstream
beforeAll(async () => {
  upstream = await startScriptedUpstream()
})
afterAll(async () => {
  await upstream?.close()
})

describe("the upstream transport", () => {
  it("refuses a certificate it does not trust even with NODE_TLS_REJECT_UNAUTHORIZED=0; trusts the configured CA", async () => {
    const url = `${upstream.issuer}/.well-known/openid-configuration`
    const before = process.env["NODE_TLS_REJECT_UNAUTHORIZED"]
    process.env["NODE_TLS_REJECT_UNAUTHORIZED"] = "0"
    try {
      await expect(upstreamFetch({ ca: undefined })(url)).rejects.toThrow(/certificate/)
    } finally {
      if (before === undefined) delete process.env["NODE_TLS_REJECT_UNAUTHORIZED"]
      else process.env["NODE_TLS_REJECT_UNAUTHORIZED"] = before
    }
    expect((await upstreamFetch({ ca: upstream.ca.caPem })(url)).status).toBe(200)
  })

  it("follows no redirect, stops at its size limit, and refuses plain http", async () => {
    await expect(
      upstreamFetch({ ca: upstream.ca.caPem, maxBytes: 100 })(`${upstream.issuer}/.well-known/openid-configuration`)
    ).rejects.toThrow(/more than 100 bytes/)
    const redirect = await upstreamFetch({ ca: upstream.ca.caPem })(
      `${upstream.issuer}/authorize?redirect_uri=https://elsewhere.example/cb&state=s`
    )
    expect(redirect.status).toBe(303)
    await expect(upstreamFetch({ ca: undefined })("http://127.0.0.1:1/x")).rejects.toThrow(/only https/)
  })
})
