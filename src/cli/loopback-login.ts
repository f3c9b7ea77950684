import { createHash, randomBytes } from "node:crypto"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { Data, Duration, Effect } from "effect"
import { isLoopbackHost } from "../config/address.js"
import type { DownstreamClient } from "../config/schema.js"
import { isPlainAddress } from "../connect/discovery.js"
import { tokenRequest } from "../connect/token-endpoint.js"

export class LoginFailed extends Data.TaggedError("LoginFailed")<{ readonly message: string }> {}

export interface LoopbackLoginRequest {
  readonly issuer: string
  /** From the issuer's metadata when known; default `{issuer}/authorize` and `{issuer}/token`. */
  readonly authorizationEndpoint?: string
  readonly tokenEndpoint?: string
  /**
   * The issuer's metadata says its answers name it (`authorization_response_iss_parameter_supported`,
   * RFC 9207 §3): then an answer without `iss` is refused. Otherwise `iss` is checked when present.
   */
  readonly issParameterSupported?: boolean
  readonly client: typeof DownstreamClient.Type
  readonly resource: string
  readonly scope: string
  /** Told the address to open, once the loopback listener is up. */
  readonly onAuthorizationUrl: (url: string) => void
  /** How long the person has to finish signing in (the login transaction lives 5 minutes). */
  readonly timeout?: Duration.DurationInput
}

/**
 * The code exchange's grant, checked (src/connect/token-endpoint.ts); `scope` is the requested one when
 * the answer names none (RFC 6749 §5.1).
 */
export interface TokenResponse {
  readonly access_token: string
  readonly expires_in: number
  readonly scope: string
  readonly refresh_token?: string | undefined
}

/** The client's first loopback redirect registered without a port: any ephemeral port may be used with it. */
export const loopbackRedirect = (client: typeof DownstreamClient.Type): URL | undefined =>
  client.redirect_uris
    .map((text) => URL.parse(text))
    .find(
      (url): url is URL => url !== null && url.protocol === "http:" && isLoopbackHost(url.hostname) && url.port === ""
    )

const page = (title: string, text: string) =>
  `<!doctype html><meta charset="utf-8"><title>${title}</title><p>${text}</p>`

/**
 * The OAuth 2.1 authorization-code flow of a native app (RFC 8252): a listener on an ephemeral
 * loopback port, PKCE S256, `state`, the person signing in in their browser through the gateway's own
 * pages, and the code exchanged at the token endpoint (no redirects, a time and a size limit, the grant
 * checked). The answer must carry this sign-in's `state`, and name the issuer (`iss`) when present or when
 * the issuer says it always does. The tokens are returned, never logged.
 */
export const loopbackLogin = (request: LoopbackLoginRequest) =>
  Effect.scoped(
    Effect.gen(function* () {
      const registered = loopbackRedirect(request.client)
      if (registered === undefined) {
        return yield* new LoginFailed({
          message: `client "${request.client.id}" has no loopback redirect registered without a port (e.g. http://127.0.0.1/callback)`
        })
      }
      const verifier = randomBytes(32).toString("base64url")
      const challenge = createHash("sha256").update(verifier).digest("base64url")
      const state = randomBytes(16).toString("base64url")
      const { server, code } = yield* Effect.acquireRelease(
        Effect.async<{ server: Server; code: Promise<string> }>((resume) => {
          let deliver: (code: string) => void = () => {}
          let refuse: (error: Error) => void = () => {}
          const code = new Promise<string>((done, fail) => {
            deliver = done
            refuse = fail
          })
          const server = createServer((incoming, response) => {
            const url = new URL(incoming.url ?? "/", "http://loopback")
            if (url.pathname !== registered.pathname) {
              response.writeHead(404).end()
              return
            }
            const params = url.searchParams
            if (params.get("state") !== state) {
              // Not this sign-in's answer (anything on the machine can reach this port): ignored, so a
              // stray or hostile request cannot end the sign-in; the real answer may still come.
              response.writeHead(400, { "content-type": "text/html; charset=utf-8" })
              response.end(page("Sign-in failed", "The answer did not belong to this sign-in."))
              return
            }
            const iss = params.get("iss")
            if (iss === null && request.issParameterSupported === true) {
              // RFC 9207 §2.4: the issuer always names itself, so an answer without `iss` is not its own.
              response.writeHead(400, { "content-type": "text/html; charset=utf-8" })
              response.end(page("Sign-in failed", "The answer did not name its issuer; see the terminal."))
              refuse(
                new Error(`the sign-in answer does not name its issuer (iss), which ${request.issuer} always does`)
              )
              return
            }
            if (iss !== null && iss !== request.issuer) {
              // RFC 9207: an answer naming another issuer is a mix-up attempt; its texts are not shown.
              response.writeHead(400, { "content-type": "text/html; charset=utf-8" })
              response.end(page("Sign-in failed", "The answer came from another issuer; see the terminal."))
              refuse(new Error(`the sign-in answer names another issuer (${iss.slice(0, 100)}), not ${request.issuer}`))
              return
            }
            response.writeHead(200, { "content-type": "text/html; charset=utf-8" })
            if (params.get("code") === null) {
              const reason = params.get("error_description") ?? params.get("error") ?? "no code"
              response.end(page("Sign-in failed", "The gateway refused the sign-in; see the terminal."))
              refuse(new Error(`the gateway refused the sign-in: ${reason}`))
            } else {
              response.end(page("Signed in", "You are signed in; you can close this window."))
              deliver(params.get("code")!)
            }
          })
          server.listen(0, registered.hostname.replace(/^\[|\]$/g, ""), () => resume(Effect.succeed({ server, code })))
        }),
        ({ server }) => Effect.sync(() => server.close())
      )
      const port = (server.address() as AddressInfo).port
      const redirectUri = `${registered.protocol}//${registered.host}:${port}${registered.pathname}${registered.search}`
      const authorize = new URL(request.authorizationEndpoint ?? `${request.issuer}/authorize`)
      for (const [name, value] of Object.entries({
        client_id: request.client.id,
        redirect_uri: redirectUri,
        response_type: "code",
        code_challenge: challenge,
        code_challenge_method: "S256",
        state,
        resource: request.resource,
        scope: request.scope
      })) {
        authorize.searchParams.set(name, value)
      }
      // The serialized (WHATWG) address is what is printed and opened; it must be plain (docs/clients.md).
      if (!isPlainAddress(authorize.href)) {
        return yield* new LoginFailed({ message: "the sign-in address contains characters an address should not" })
      }
      request.onAuthorizationUrl(authorize.href)
      const received = yield* Effect.tryPromise({
        try: () => code,
        catch: (error) => new LoginFailed({ message: error instanceof Error ? error.message : String(error) })
      }).pipe(
        Effect.timeoutFail({
          duration: request.timeout ?? Duration.minutes(5),
          onTimeout: () => new LoginFailed({ message: "the sign-in was not completed in time" })
        })
      )
      const answer = yield* Effect.tryPromise({
        try: () =>
          tokenRequest(request.tokenEndpoint ?? `${request.issuer}/token`, {
            grant_type: "authorization_code",
            client_id: request.client.id,
            code: received,
            redirect_uri: redirectUri,
            code_verifier: verifier,
            resource: request.resource
          }),
        catch: (error) => new LoginFailed({ message: error instanceof Error ? error.message : String(error) })
      })
      if (!answer.granted) {
        const reason = answer.description ?? answer.error ?? `HTTP ${answer.status}`
        return yield* new LoginFailed({ message: `the gateway refused the code exchange: ${reason}` })
      }
      const { access_token, expires_in, refresh_token, scope } = answer.grant
      const tokens: TokenResponse = { access_token, expires_in, refresh_token, scope: scope ?? request.scope }
      return tokens
    })
  )
