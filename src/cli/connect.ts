import { Args, Command, Options } from "@effect/cli"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/client"
import { StdioServerTransport } from "@modelcontextprotocol/server/stdio"
import { Effect, Option } from "effect"
import { openBrowser } from "../connect/browser.js"
import { defaultCredentialsFile } from "../connect/credentials.js"
import { checkTransport, discover } from "../connect/discovery.js"
import { relay } from "../connect/relay.js"
import { TokenSource } from "../connect/token-source.js"
import { loopbackLogin } from "./loopback-login.js"

const say = (line: string) => process.stderr.write(`gateway connect: ${line}\n`)

/**
 * `gateway connect <public_url>` (docs/clients.md): a stdio MCP server for clients that speak stdio or
 * cannot register an OAuth client. It signs the person in through the browser with the registered
 * loopback client (PKCE S256, the gateway's own pages), keeps the refresh token in a file only the user
 * can read, renews the access token before it expires, signs in again when the session ends, and
 * relays every message both ways. Standard output carries MCP only; everything for the person goes to
 * standard error. No token is ever written there.
 */
export const connectCommand = Command.make(
  "connect",
  {
    url: Args.text({ name: "public_url" }).pipe(Args.withDescription("The gateway's /mcp address (server.public_url)")),
    client: Options.text("client").pipe(
      Options.withDefault("gateway-cli"),
      Options.withDescription("The auth.sso.clients entry to sign in with (public, a loopback redirect)")
    ),
    redirect: Options.text("redirect").pipe(
      Options.withDefault("http://127.0.0.1/callback"),
      Options.withDescription("The client's registered loopback redirect (no port: an ephemeral one is used)")
    ),
    scope: Options.text("scope").pipe(
      Options.repeated,
      Options.withDescription("A scope to request (repeatable); default: what the gateway advertises")
    ),
    credentials: Options.text("credentials").pipe(
      Options.optional,
      Options.withDescription("The file keeping the refresh token (default under $XDG_CONFIG_HOME/gateway/connect)")
    ),
    noBrowser: Options.boolean("no-browser").pipe(
      Options.withDescription("Do not open a browser; only print the sign-in address on standard error")
    ),
    refreshMargin: Options.integer("refresh-margin").pipe(
      Options.withDefault(60),
      Options.withDescription("Renew the access token this many seconds before it expires (at most half its life)")
    )
  },
  ({ url, client, redirect, scope, credentials, noBrowser, refreshMargin }) =>
    Effect.gen(function* () {
      const redirectUrl = checkTransport(redirect, "The redirect")
      if (redirectUrl.protocol !== "http:" || redirectUrl.port !== "") {
        return yield* Effect.fail(
          new Error(`--redirect must be a loopback http address without a port, e.g. http://127.0.0.1/callback`)
        )
      }
      if (refreshMargin < 0 || refreshMargin > 86_400) {
        return yield* Effect.fail(new Error("--refresh-margin must be between 0 and 86400 seconds"))
      }
      const endpoints = yield* Effect.tryPromise({ try: () => discover(url), catch: (error) => error as Error })
      const requested = scope.length > 0 ? scope : endpoints.scopes
      const file = Option.getOrElse(credentials, () => defaultCredentialsFile(endpoints.resource, process.env))
      const tokens = yield* Effect.try({
        try: () =>
          new TokenSource({
            endpoints,
            clientId: client,
            credentialsFile: file,
            refreshMarginSeconds: refreshMargin,
            say,
            opensBrowser: !noBrowser,
            signIn: (onUrl) =>
              Effect.runPromise(
                loopbackLogin({
                  issuer: endpoints.issuer,
                  authorizationEndpoint: endpoints.authorizationEndpoint,
                  tokenEndpoint: endpoints.tokenEndpoint,
                  issParameterSupported: endpoints.issParameterSupported,
                  client: { id: client, redirect_uris: [redirectUrl.href], resources: [endpoints.resource] },
                  resource: endpoints.resource,
                  scope: requested.join(" "),
                  onAuthorizationUrl: (address) => {
                    onUrl(address)
                    if (!noBrowser) openBrowser(address)
                  }
                })
              ).then((grant) => {
                say(`signed in; the sign-in is kept in ${file}`)
                return grant
              })
          }),
        catch: (error) => error as Error
      })
      say(`relaying stdio to ${endpoints.resource}`)
      const gateway = new StreamableHTTPClientTransport(new URL(endpoints.resource), {
        authProvider: { token: () => tokens.token(), onUnauthorized: () => tokens.unauthorized() }
      })
      const local = new StdioServerTransport()
      yield* Effect.promise(async () => {
        await gateway.start()
        const finished = relay(local, gateway, say)
        await local.start()
        await finished
      })
    })
).pipe(Command.withDescription("A stdio MCP server that relays to a gateway's /mcp, signing in through the browser"))
