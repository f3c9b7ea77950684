import type { ApprovalEventRow } from "../../store/approval-events.js"
import type { ArchiveEntry } from "./format.js"

/**
 * The archive entry of one outbox event (docs/audit-archive.md, "The entry"). The outbox's evidence
 * (`sign_in`, `acr`) becomes `evidence.method` and `evidence.acr`; an event nobody signed in for has
 * none. The deadline (`expires_at`) is the webhook's business, not a decision: it is left out.
 */
export const entryOfEvent = (
  event: ApprovalEventRow,
  sequence: number,
  previousHash: string,
  keyId: string
): ArchiveEntry => {
  const acr = event.evidence.acr ?? null
  const method = event.evidence.sign_in ?? null
  return {
    sequence,
    previous_hash: previousHash,
    key_id: keyId,
    event_id: event.event_id,
    approval_id: event.approval_id,
    action: event.action,
    actor: event.actor,
    occurred_at: event.occurred_at.toISOString(),
    reason: event.reason,
    evidence: acr === null && method === null ? null : { acr, method },
    intent_hash: event.intent_hash,
    result_hash: event.result_hash
  }
}

/** Reminders record no decision: the archive skips them (docs/audit-archive.md, "What is archived"). */
export const isArchived = (event: ApprovalEventRow): boolean => event.action !== "reminder"
