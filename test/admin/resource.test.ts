/**
 * The admin origin (docs/management-api.md, "Where it listens"): the admin listener's in local mode,
 * `admin.public_url`'s origin in remote mode — the audience of Management API tokens, the origin the API
 * and the console accept, the CLI's target, and the console's callback.
 */
import { describe, expect, it } from "@effect/vitest"
import { adminResource, adminResourceMetadata, consoleRedirectUri } from "../../src/admin/resource.js"
import { configOf } from "../fixtures/config/base.js"

describe("the admin origin", () => {
  it("local mode: http://<admin.listen>", () => {
    const config = configOf({ admin: { listen: "127.0.0.1:9091" } })
    expect(adminResource(config)).toBe("http://127.0.0.1:9091")
    expect(consoleRedirectUri(config)).toBe("http://127.0.0.1:9091/console/callback")
  })

  it("remote mode: admin.public_url's origin, whatever admin.listen is", () => {
    const config = configOf({
      admin: { mode: "remote", listen: "0.0.0.0:8081", public_url: "https://Admin.Example.com:443/", client_id: "c" }
    })
    expect(adminResource(config)).toBe("https://admin.example.com")
    expect(adminResourceMetadata(config)).toBe("https://admin.example.com/.well-known/oauth-protected-resource")
    expect(consoleRedirectUri(config)).toBe("https://admin.example.com/console/callback")
  })
})
