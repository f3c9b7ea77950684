import { Clock, Effect } from "effect"
import type { StepUpEvidence } from "./reviewers.js"

/**
 * What a step-up sign-in is for: one reviewer, one approval, in one browser sign-in. The same step-up
 * serves the review of a configuration change (`for: "config_change"`, `approvalId` then being the
 * proposal's id): evidence for one never counts for the other.
 */
export interface StepUpPurpose {
  readonly approvalId: string
  readonly userId: string
  /** SHA-256 of the browser sign-in's cookie token: the evidence counts only in that sign-in. */
  readonly sessionHash: string
  /** A write approval (absent) or a configuration change under review (docs/tool-sources.md). */
  readonly for?: StepUpFor
}

export type StepUpFor = "approval" | "config_change"

const MAX_ENTRIES = 10_000

/**
 * Step-up evidence (docs/approvals.md, "Step-up"): a reviewer who signed in again at the identity
 * provider for one approval, with the verified `acr` and `auth_time` of that authentication. Kept in
 * memory for `maxAgeMs` (the freshness the vote needs anyway), per browser sign-in and approval, so it
 * proves nothing for another approval, another browser or after a restart.
 */
export class StepUps extends Effect.Service<StepUps>()("gateway/StepUps", {
  sync: () => {
    const entries = new Map<string, StepUpEvidence & { readonly userId: string; readonly until: number }>()
    const keyOf = (sessionHash: string, approvalId: string, what: StepUpFor = "approval") =>
      `${what}|${sessionHash}|${approvalId}`

    const record = (purpose: StepUpPurpose, acr: string, authTime: number, maxAgeMs: number) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        if (entries.size >= MAX_ENTRIES) {
          for (const [key, entry] of entries) if (entry.until <= now) entries.delete(key)
          if (entries.size >= MAX_ENTRIES) entries.clear()
        }
        entries.set(keyOf(purpose.sessionHash, purpose.approvalId, purpose.for), {
          approvalId: purpose.approvalId,
          userId: purpose.userId,
          acr,
          authTime,
          until: authTime + maxAgeMs
        })
      })

    /**
     * The evidence of this sign-in for this approval (or configuration change, `what`), if it is still
     * fresh and was given by `userId`.
     */
    const find = (sessionHash: string, approvalId: string, userId: string, what: StepUpFor = "approval") =>
      Effect.map(Clock.currentTimeMillis, (now): StepUpEvidence | undefined => {
        const entry = entries.get(keyOf(sessionHash, approvalId, what))
        if (entry === undefined || entry.userId !== userId || entry.until <= now) return undefined
        return { approvalId: entry.approvalId, acr: entry.acr, authTime: entry.authTime }
      })

    return { record, find } as const
  }
}) {}
