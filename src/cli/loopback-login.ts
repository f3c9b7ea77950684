import { createHash, randomBytes } from "node:crypto"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { Data, Duration, Effect } from "effect"
import { isLoopbackHost } from "../config/address.js"
import type { DownstreamClient } from "../config/schema.js"

export class LoginFailed extends Data.TaggedError("LoginFailed")<{ readonly message: string }> {}

export interface LoopbackLoginRequest {
  readonly issuer: string
  /** From the issuer's metadata when known; default `{issuer}/authorize` and `{issuer}/token`. */
  readonly authorizationEndpoint?: string
  readonly tokenEndpoint?: string
  readonly client: typeof DownstreamClient.Type
  readonly resource: string
  readonly scope: string
  /** Told the address to open, once the loopback listener is up. */
  readonly onAuthorizationUrl: (url: string) => void
  /** How long the person has to finish signing in (the login transaction lives 5 minutes). */
  readonly timeout?: Duration.DurationInput
}

export interface TokenResponse {
  readonly access_token: string
  readonly expires_in: number
  readonly scope: string
  readonly refresh_token?: string
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
 * pages, and the code exchanged at the token endpoint. The tokens are returned, never logged.
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
      request.onAuthorizationUrl(authorize.toString())
      const received = yield* Effect.tryPromise({
        try: () => code,
        catch: (error) => new LoginFailed({ message: error instanceof Error ? error.message : String(error) })
      }).pipe(
        Effect.timeoutFail({
          duration: request.timeout ?? Duration.minutes(5),
          onTimeout: () => new LoginFailed({ message: "the sign-in was not completed in time" })
        })
      )
      const response = yield* Effect.tryPromise({
        try: () =>
          fetch(request.tokenEndpoint ?? `${request.issuer}/token`, {
            method: "POST",
            headers: { "content-type": "application/x-www-form-urlencoded" },
            body: new URLSearchParams({
              grant_type: "authorization_code",
              client_id: request.client.id,
              code: received,
              redirect_uri: redirectUri,
              code_verifier: verifier,
              resource: request.resource
            }).toString()
          }).then(async (answer) => ({
            status: answer.status,
            body: (await answer.json()) as Record<string, unknown>
          })),
        catch: (error) => new LoginFailed({ message: `the token endpoint did not answer: ${String(error)}` })
      })
      if (response.status !== 200 || typeof response.body["access_token"] !== "string") {
        const reason = response.body["error_description"] ?? response.body["error"] ?? response.status
        return yield* new LoginFailed({ message: `the gateway refused the code exchange: ${String(reason)}` })
      }
      return response.body as unknown as TokenResponse
    })
  )
