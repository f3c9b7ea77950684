import { Clock, Effect } from "effect"
import type { StepUpEvidence } from "./reviewers.js"

/** What a step-up sign-in is for: one reviewer, one approval, in one browser sign-in. */
export interface StepUpPurpose {
  readonly approvalId: string
  readonly userId: string
  /** SHA-256 of the browser sign-in's cookie token: the evidence counts only in that sign-in. */
  readonly sessionHash: string
}

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
    const keyOf = (sessionHash: string, approvalId: string) => `${sessionHash}|${approvalId}`

    const record = (purpose: StepUpPurpose, acr: string, authTime: number, maxAgeMs: number) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        if (entries.size >= MAX_ENTRIES) {
          for (const [key, entry] of entries) if (entry.until <= now) entries.delete(key)
          if (entries.size >= MAX_ENTRIES) entries.clear()
        }
        entries.set(keyOf(purpose.sessionHash, purpose.approvalId), {
          approvalId: purpose.approvalId,
          userId: purpose.userId,
          acr,
          authTime,
          until: authTime + maxAgeMs
        })
      })

    /** The evidence of this sign-in for this approval, if it is still fresh and was given by `userId`. */
    const find = (sessionHash: string, approvalId: string, userId: string) =>
      Effect.map(Clock.currentTimeMillis, (now): StepUpEvidence | undefined => {
        const entry = entries.get(keyOf(sessionHash, approvalId))
        if (entry === undefined || entry.userId !== userId || entry.until <= now) return undefined
        return { approvalId: entry.approvalId, acr: entry.acr, authTime: entry.authTime }
      })

    return { record, find } as const
  }
}) {}
