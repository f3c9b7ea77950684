import { Data } from "effect"
import {
  type CredentialsError,
  readCredentials,
  removeCredentials,
  storedRefreshToken,
  withCredentialsLock,
  writeCredentials
} from "./credentials.js"
import type { GatewayEndpoints } from "./discovery.js"
import { type Grant, TokenRequestFailed, tokenRequest } from "./token-endpoint.js"

/** The gateway's session ended (revoked, expired, account disabled): a person must sign in again. */
export class SessionEnded extends Data.TaggedError("SessionEnded")<{ readonly message: string }> {}

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
  /** Whether the sign-in address is also opened in a browser (`--no-browser`: only printed). */
  readonly opensBrowser?: boolean
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
 * rotated refresh token twice would make the gateway revoke the whole session (reuse detection). For the
 * same reason, bridges sharing the credentials file renew under its lock, each with the refresh token
 * the file holds then (another bridge may have rotated it).
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
    // Another bridge sharing the file may have signed in since this one last looked.
    this.refreshToken ??= this.readStored()?.refresh_token
    if (this.refreshToken === undefined) return this.accept(await this.options.signIn(this.announce))
    const ended = await withCredentialsLock(this.options.credentialsFile, () => this.refreshUnderLock())
    if (ended === undefined) return
    this.access = undefined
    this.refreshToken = undefined
    // Start the new sign-in at once; its address goes to standard error (and the browser), never into
    // the answer the client shows, which says only where to look.
    const failed = await this.startSignIn()
    throw new SessionEnded({
      message:
        failed === undefined
          ? `Your gateway session has ended (${ended}). Sign in again in your browser: the bridge opens the ` +
            "sign-in page (unless run with --no-browser) and prints its address on its standard error (the MCP " +
            "client's log for this server) — then retry."
          : `Your gateway session has ended (${ended}), and a new sign-in could not start: ${failed}`
    })
  }

  /**
   * Holding the file's lock: renews with the refresh token the file holds now, when it holds one for this
   * gateway and client (another bridge may have rotated the one this one knew), and saves the new one.
   * Returns why the session ended when the gateway refused the refresh token for good; the file is then
   * removed only if it still holds that token.
   */
  private async refreshUnderLock(): Promise<string | undefined> {
    const stored = this.readStored()
    if (stored !== undefined) this.refreshToken = stored.refresh_token
    const used = this.refreshToken!
    let grant: Grant
    try {
      grant = await this.refresh(used)
    } catch (error) {
      if (!(error instanceof SessionEnded)) throw error
      if (storedRefreshToken(this.options.credentialsFile) === used) removeCredentials(this.options.credentialsFile)
      return error.message
    }
    this.accept(grant)
    return undefined
  }

  private readStored() {
    return readCredentials(this.options.credentialsFile, {
      resource: this.options.endpoints.resource,
      issuer: this.options.endpoints.issuer,
      clientId: this.options.clientId
    })
  }

  /**
   * Begins a browser sign-in that later renewals wait for. Resolves once its address has been announced
   * (undefined), or with why it failed before it had one.
   */
  private startSignIn(): Promise<string | undefined> {
    let announced: () => void = () => {}
    const url = new Promise<undefined>((done) => {
      announced = () => done(undefined)
    })
    const signIn = this.options.signIn((address) => {
      this.announce(address)
      announced()
    })
    const accepted = signIn.then((grant) => this.accept(grant))
    this.track(accepted)
    return Promise.race([
      url,
      accepted.then(
        () => undefined,
        (error) => String(error.message ?? error)
      )
    ])
  }

  private readonly announce = (url: string) => {
    this.options.say(
      this.options.opensBrowser === false
        ? `Sign in to the gateway: open this address in a browser:\n\n  ${url}\n`
        : `Sign in to the gateway in your browser (opened if possible):\n\n  ${url}\n`
    )
  }

  private accept(grant: Grant): void {
    const lifetime = grant.expires_in * 1000
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
    const answer = await tokenRequest(this.options.endpoints.tokenEndpoint, {
      grant_type: "refresh_token",
      client_id: this.options.clientId,
      refresh_token: refreshToken,
      resource: this.options.endpoints.resource
    })
    if (answer.granted) return answer.grant
    const reason = answer.description ?? `HTTP ${answer.status}`
    // invalid_grant: the session is over for good; anything else may pass (the gateway restarting).
    if (answer.error === "invalid_grant") throw new SessionEnded({ message: reason })
    throw new TokenRequestFailed({ message: `the gateway refused to renew the token: ${reason}` })
  }
}

export type { CredentialsError, Grant }
