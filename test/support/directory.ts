import { Effect } from "effect"
import { namespaceOf } from "../../src/identity/upstream/connection.js"
import { LogCapture } from "./logs.js"
import { type OAuthGateway, type OAuthGatewayOptions, oauthGateway } from "./oauth-gateway.js"

/** The directory secret of the test gateways (the variable `auth.sso.directory_token_env` names). */
export const DIRECTORY_TOKEN = "directory-secret-0123456789-abcdefghijklmnop"

/** An in-process gateway with an OIDC upstream (never contacted here) and directory pushes enabled. */
export const directoryGateway = (
  options: Pick<OAuthGatewayOptions, "kind" | "port"> & { readonly upstream?: Record<string, unknown> } = {}
) =>
  Effect.gen(function* () {
    const logs = new LogCapture()
    const gateway = yield* oauthGateway({
      ...options,
      logs,
      env: { UPSTREAM_SECRET: "upstream-secret", DIRECTORY_TOKEN },
      auth: () => ({
        sso: {
          upstream: {
            protocol: "oidc",
            issuer: "https://login.example.com",
            client_id: "gateway",
            client_secret_env: "UPSTREAM_SECRET",
            ...options.upstream
          },
          directory_token_env: "DIRECTORY_TOKEN"
        }
      })
    })
    return { gateway, logs, provider: namespaceOf(gateway.loaded.config.auth.sso.upstream!) }
  })

export interface PushAnswer {
  readonly status: number
  readonly headers: Headers
  readonly body: Record<string, unknown>
}

/** `PUT /sso/directory` with `body` (an object is sent as JSON) and the secret (or `token`). */
/** `token` null: no Authorization header at all. */
export const push = (gateway: OAuthGateway, body: unknown, token: string | null = DIRECTORY_TOKEN, query = "") =>
  Effect.promise(async (): Promise<PushAnswer> => {
    const response = await fetch(`${gateway.baseUrl}/sso/directory${query}`, {
      method: "PUT",
      headers: {
        "content-type": "application/json",
        ...(token === null ? {} : { authorization: `Bearer ${token}` })
      },
      body: typeof body === "string" ? body : JSON.stringify(body)
    })
    const text = await response.text()
    return { status: response.status, headers: response.headers, body: text === "" ? {} : JSON.parse(text) }
  })

/** A snapshot: `people` as [subject, active, groups, departments]. */
export const snapshot = (
  version: number,
  people: ReadonlyArray<readonly [string, boolean, ReadonlyArray<string>?, ReadonlyArray<string>?]>,
  declared: { readonly groups?: ReadonlyArray<string>; readonly departments?: ReadonlyArray<string> } = {}
) => ({
  version,
  groups: [
    ...(declared.groups ?? ["eng", "ops"]).map((id) => ({ kind: "group", id, name: id.toUpperCase() })),
    ...(declared.departments ?? ["rd"]).map((id) => ({ kind: "department", id, name: id.toUpperCase() }))
  ],
  users: people.map(([subject, active, groups = [], departments = []]) => ({
    subject,
    name: `Person ${subject}`,
    active,
    groups,
    departments
  }))
})
