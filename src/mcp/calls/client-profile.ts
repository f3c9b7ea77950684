import { randomBytes } from "node:crypto"
import { isRecord } from "../../json.js"

/**
 * What a caller can answer when a backend asks it something during a call — its client capabilities
 * for sampling, elicitation and roots — reduced to a few bits (docs/mcp.md, "Input requests"). A
 * 2025-era backend learns a client's capabilities once, in `initialize`, for the session: the gateway
 * keeps one backend session per profile, so each caller's call goes to a session that declared what
 * this caller can do, and the backend asks only callers that can answer. Few bits, so few sessions.
 */
export type ClientProfile = number

const sampling = 1
const samplingTools = 2
const elicitationForm = 4
const elicitationUrl = 8
const roots = 16

/** A caller that declared none of them (and every caller whose capabilities are not known). */
export const noProfile: ClientProfile = 0

const present = (value: unknown) => isRecord(value)

/** The profile of declared client capabilities (an `initialize`'s, or a 2026-07-28 envelope's). */
export const profileOf = (capabilities: unknown): ClientProfile => {
  if (!isRecord(capabilities)) return noProfile
  let profile = noProfile
  const { sampling: samples, elicitation, roots: lists } = capabilities
  if (isRecord(samples)) profile |= present(samples["tools"]) ? sampling | samplingTools : sampling
  if (isRecord(elicitation)) {
    const form = present(elicitation["form"])
    const url = present(elicitation["url"])
    // An empty `elicitation` (2025-06-18) means form mode.
    profile |= (form || !url ? elicitationForm : 0) | (url ? elicitationUrl : 0)
  }
  if (isRecord(lists)) profile |= roots
  return profile
}

/**
 * The client capabilities a profile declares to a backend. `roots` without `listChanged`: the gateway
 * relays no notifications from a caller to a backend session other callers share.
 */
export const capabilitiesOf = (profile: ClientProfile): Record<string, unknown> => ({
  ...((profile & sampling) !== 0 ? { sampling: (profile & samplingTools) !== 0 ? { tools: {} } : {} } : {}),
  ...((profile & (elicitationForm | elicitationUrl)) !== 0
    ? {
        elicitation: {
          ...((profile & elicitationForm) !== 0 ? { form: {} } : {}),
          ...((profile & elicitationUrl) !== 0 ? { url: {} } : {})
        }
      }
    : {}),
  ...((profile & roots) !== 0 ? { roots: {} } : {})
})

/** Whether a caller of this profile said it answers `method` (a request a backend sends it). */
export const answers = (profile: ClientProfile, method: string): boolean => {
  if (method === "sampling/createMessage") return (profile & sampling) !== 0
  if (method === "elicitation/create") return (profile & (elicitationForm | elicitationUrl)) !== 0
  if (method === "roots/list") return (profile & roots) !== 0
  return false
}

/**
 * The `Mcp-Session-Id` the gateway gives a 2025-era client in its `initialize` answer: the gateway keeps
 * no sessions, so the id itself carries what the client declared — `g1.<profile>.<random>` — and comes
 * back on every request the client sends. It holds nothing secret and grants nothing: a client that
 * forges one only claims capabilities for itself, as it could in `initialize`. The random part keeps
 * ids distinct, as clients expect of session ids.
 */
export const sessionIdFor = (profile: ClientProfile): string =>
  `g1.${profile.toString(36)}.${randomBytes(12).toString("hex")}`

const sessionIdPattern = /^g1\.([0-9a-v]{1,2})\.[0-9a-f]{24}$/

/** The profile a client's `Mcp-Session-Id` carries; undefined when it is not one the gateway gave. */
export const profileOfSessionId = (value: string | ReadonlyArray<string> | undefined): ClientProfile | undefined => {
  if (typeof value !== "string") return undefined
  const match = sessionIdPattern.exec(value)
  if (match === null) return undefined
  const profile = Number.parseInt(match[1]!, 36)
  return profile < 32 ? profile : undefined
}
