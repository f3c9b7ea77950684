import { createServer } from "node:https"
import { exportJWK, generateKeyPair, type JWTPayload, SignJWT } from "jose"
import { freePort } from "./gateway-process.js"
import { makeTestCa, type TestCa } from "./test-ca.js"

/**
 * A scripted identity provider over HTTPS (test CA), for what no certified provider will send: ID
 * tokens with a wrong audience, issuer, nonce or expiry, `alg: none`, a foreign signature, discovery
 * without S256 — and an OAuth2 UserInfo endpoint with nested claims and failure envelopes. Limited to
 * those cases: the protocol itself is tested against oidc-provider (test/support/oidc-provider.ts).
 * `/authorize` answers at once with a code; `/token` answers the ID token `idToken` builds.
 */
export interface ScriptedUpstream {
  readonly issuer: string
  readonly ca: TestCa
  readonly clientSecret: string
  /** Adjusts the claims and how the token is signed; the default is a valid RS256 token. */
  idToken: (claims: JWTPayload) => { readonly claims: JWTPayload; readonly sign: "valid" | "none" | "foreign_key" }
  /** How long `/token` waits before answering (a slow provider). */
  tokenDelayMs: number
  /** false: the token answer carries no ID token (a plain OAuth2 provider). */
  withIdToken: boolean
  /** The UserInfo answer (OAuth2): status and body. */
  userInfo: { status: number; body: unknown }
  /** The token requests received (form fields and the Authorization header). */
  readonly tokenRequests: Array<{ readonly form: URLSearchParams; readonly authorization: string | undefined }>
  close(): Promise<void>
}

const b64 = (value: object) => Buffer.from(JSON.stringify(value)).toString("base64url")

export const startScriptedUpstream = async (options: { readonly s256?: boolean } = {}): Promise<ScriptedUpstream> => {
  const ca = makeTestCa("scripted upstream test CA")
  const port = await freePort()
  const issuer = `https://127.0.0.1:${port}`
  const own = await generateKeyPair("RS256")
  const foreign = await generateKeyPair("RS256")
  const publicJwk = { ...(await exportJWK(own.publicKey)), kid: "k1", use: "sig", alg: "RS256" }
  const nonces = new Map<string, string>()
  const state: ScriptedUpstream = {
    issuer,
    ca,
    clientSecret: "scripted-client-secret-0123456789abcdef",
    idToken: (claims) => ({ claims, sign: "valid" }),
    withIdToken: true,
    tokenDelayMs: 0,
    userInfo: { status: 200, body: {} },
    tokenRequests: [],
    close: async () => {
      await new Promise((done) => server.close(done))
      server.closeAllConnections()
      ca.remove()
    }
  }
  const json = (response: import("node:http").ServerResponse, status: number, body: unknown) => {
    response.writeHead(status, { "content-type": "application/json" })
    response.end(JSON.stringify(body))
  }
  const server = createServer({ key: ca.key, cert: ca.cert }, (request, response) => {
    const url = new URL(request.url ?? "/", issuer)
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", async () => {
      switch (url.pathname) {
        case "/.well-known/openid-configuration":
          return json(response, 200, {
            issuer,
            authorization_endpoint: `${issuer}/authorize`,
            token_endpoint: `${issuer}/token`,
            userinfo_endpoint: `${issuer}/userinfo`,
            jwks_uri: `${issuer}/jwks`,
            response_types_supported: ["code"],
            subject_types_supported: ["public"],
            id_token_signing_alg_values_supported: ["RS256"],
            code_challenge_methods_supported: options.s256 === false ? ["plain"] : ["S256"]
          })
        case "/jwks":
          return json(response, 200, { keys: [publicJwk] })
        case "/authorize": {
          const code = `code-${nonces.size}`
          nonces.set(code, url.searchParams.get("nonce") ?? "")
          const back = new URL(url.searchParams.get("redirect_uri") ?? "")
          back.searchParams.set("code", code)
          back.searchParams.set("state", url.searchParams.get("state") ?? "")
          response.writeHead(303, { location: back.toString() })
          return response.end()
        }
        case "/token": {
          const form = new URLSearchParams(Buffer.concat(chunks).toString("utf8"))
          state.tokenRequests.push({ form, authorization: request.headers.authorization })
          if (state.tokenDelayMs > 0) await new Promise((done) => setTimeout(done, state.tokenDelayMs))
          const now = Math.floor(Date.now() / 1000)
          const { claims, sign } = state.idToken({
            iss: issuer,
            sub: "forged-subject",
            aud: "gateway",
            iat: now,
            exp: now + 300,
            nonce: nonces.get(form.get("code") ?? "") ?? ""
          })
          const idToken =
            sign === "none"
              ? `${b64({ alg: "none", typ: "JWT" })}.${b64(claims)}.`
              : await new SignJWT(claims)
                  .setProtectedHeader({ alg: "RS256", kid: "k1" })
                  .sign(sign === "valid" ? own.privateKey : foreign.privateKey)
          return json(response, 200, {
            access_token: "upstream-access-token",
            token_type: "Bearer",
            expires_in: 300,
            ...(state.withIdToken ? { id_token: idToken } : {})
          })
        }
        case "/userinfo":
          if (request.headers.authorization !== "Bearer upstream-access-token") return json(response, 401, {})
          return json(response, state.userInfo.status, state.userInfo.body)
        default:
          return json(response, 404, {})
      }
    })
  })
  await new Promise<void>((done) => server.listen(port, "127.0.0.1", done))
  return state
}
