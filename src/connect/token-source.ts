import { Data } from "effect"
import { type CredentialsError, readCredentials, removeCredentials, writeCredentials } from "./credentials.js"
import type { GatewayEndpoints } from "./discovery.js"

/** The gateway's session ended (revoked, expired, account disabled): a person must sign in again. */
export class SessionEnded extends Data.TaggedError("SessionEnded")<{ readonly message: string }> {}

/** A token endpoint answer that is not a grant (the endpoint refused, or did not answer). */
export class TokenRequestFailed extends Data.TaggedError("TokenRequestFailed")<{ readonly message: string }> {}

export interface Grant {
  readonly access_token: string
  readonly expires_in: number
  readonly refresh_token?: string | undefined
}

export interface TokenSourceOptions {
  readonly endpoints: GatewayEndpoints
  readonly clientId: string
  readonly credentialsFile: string
  /** Renew this many seconds before the access token expires (capped at half its lifetime). */
  readonly refreshMarginSeconds: number
  /** Signs the person in through the browser; `onUrl` is told the address to open as soon as it is known. */
  readonly signIn: (onUrl: (url: string) => void) => Promise<Grant>
  /** One line for the person (standard error). Never given a token. */
  readonly say: (line: string) => void
  readonly now?: () => number
}

interface Access {
  readonly token: string
  /** When to renew (ms): before expiry by the margin. */
  readonly renewAt: number
}

/**
 * The bridge's tokens for one gateway: an access token in memory, renewed before it expires with the
 * refresh token (rotated and saved at once), and a browser sign-in when there is no usable refresh
 * token. One renewal at a time: concurrent requests wait for the same one, because presenting a
 * rotated refresh token twice would make the gateway revoke the whole session (reuse detection).
 */
export class TokenSource {
  private access: Access | undefined
  private refreshToken: string | undefined
  private pending: Promise<void> | undefined
  private readonly now: () => number

  constructor(private readonly options: TokenSourceOptions) {
    this.now = options.now ?? Date.now
    const stored = readCredentials(options.credentialsFile, {
      resource: options.endpoints.resource,
      issuer: options.endpoints.issuer,
      clientId: options.clientId
    })
    this.refreshToken = stored?.refresh_token
  }

  /** A valid access token, renewing or signing in first when needed. */
  async token(): Promise<string> {
    for (;;) {
      const access = this.access
      if (access !== undefined && this.now() < access.renewAt) return access.token
      await this.renew()
    }
  }

  /** The gateway refused the access token (401): drop it and renew; a refused renewal throws SessionEnded. */
  async unauthorized(): Promise<void> {
    this.access = undefined
    await this.renew()
  }

  private renew(): Promise<void> {
    if (this.pending === undefined) this.track(this.renewOnce())
    return this.pending!
  }

  /** Makes `work` the renewal others wait for, until it settles (a later one may have replaced it). */
  private track(work: Promise<void>): void {
    const tracked: Promise<void> = work.finally(() => {
      if (this.pending === tracked) this.pending = undefined
    })
    // Handled here so a sign-in nobody waits for yet never becomes an unhandled rejection.
    tracked.catch(() => {})
    this.pending = tracked
  }

  private async renewOnce(): Promise<void> {
    if (this.refreshToken === undefined) return this.accept(await this.options.signIn(this.announce))
    let grant: Grant
    try {
      grant = await this.refresh(this.refreshToken)
    } catch (error) {
      if (!(error instanceof SessionEnded)) throw error
      this.access = undefined
      this.refreshToken = undefined
      removeCredentials(this.options.credentialsFile)
      // Start the new sign-in at once, so its address can go into the answer the client shows.
      const address = this.startSignIn()
      throw new SessionEnded({
        message:
          `Your gateway session has ended (${error.message}). Sign in again in your browser: ${await address} — ` +
          "then retry."
      })
    }
    this.accept(grant)
  }

  /** Begins a browser sign-in that later renewals wait for; resolves with its address. */
  private startSignIn(): Promise<string> {
    let tellUrl: (url: string) => void = () => {}
    const url = new Promise<string>((done) => {
      tellUrl = done
    })
    const signIn = this.options.signIn((address) => {
      this.announce(address)
      tellUrl(address)
    })
    const accepted = signIn.then((grant) => this.accept(grant))
    this.track(accepted)
    // A sign-in that fails before it has an address still answers the request that started it.
    return Promise.race([
      url,
      accepted.then(
        () => "(already signed in)",
        (error) => String(error.message ?? error)
      )
    ])
  }

  private readonly announce = (url: string) => {
    this.options.say(`Sign in to the gateway in your browser (opened if possible):\n\n  ${url}\n`)
  }

  private accept(grant: Grant): void {
    const lifetime = Math.max(1, grant.expires_in) * 1000
    const margin = Math.min(this.options.refreshMarginSeconds * 1000, lifetime / 2)
    if (grant.refresh_token !== undefined) {
      this.refreshToken = grant.refresh_token
      writeCredentials(this.options.credentialsFile, {
        version: 1,
        resource: this.options.endpoints.resource,
        issuer: this.options.endpoints.issuer,
        client_id: this.options.clientId,
        refresh_token: grant.refresh_token,
        saved_at: new Date(this.now()).toISOString()
      })
    }
    this.access = { token: grant.access_token, renewAt: this.now() + lifetime - margin }
  }

  private async refresh(refreshToken: string): Promise<Grant> {
    const { status, body } = await tokenRequest(this.options.endpoints.tokenEndpoint, {
      grant_type: "refresh_token",
      client_id: this.options.clientId,
      refresh_token: refreshToken,
      resource: this.options.endpoints.resource
    })
    if (status === 200 && typeof body["access_token"] === "string") return body as unknown as Grant
    const reason = typeof body["error_description"] === "string" ? body["error_description"] : `HTTP ${status}`
    // invalid_grant: the session is over for good; anything else may pass (the gateway restarting).
    if (body["error"] === "invalid_grant") throw new SessionEnded({ message: reason })
    throw new TokenRequestFailed({ message: `the gateway refused to renew the token: ${reason}` })
  }
}

/** A form POST to the token endpoint; the answer's JSON (an empty object if it has none). */
export const tokenRequest = async (
  endpoint: string,
  form: Readonly<Record<string, string>>
): Promise<{ status: number; body: Record<string, unknown> }> => {
  let response: Response
  try {
    response = await fetch(endpoint, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", accept: "application/json" },
      body: new URLSearchParams(form).toString(),
      redirect: "error"
    })
  } catch (error) {
    throw new TokenRequestFailed({ message: `the token endpoint did not answer: ${String(error)}` })
  }
  const body: unknown = await response.json().catch(() => ({}))
  return {
    status: response.status,
    body: typeof body === "object" && body !== null && !Array.isArray(body) ? (body as Record<string, unknown>) : {}
  }
}

export type { CredentialsError }
