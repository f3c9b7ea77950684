import { Clock, Effect, Option } from "effect"
import { seeOther } from "../../auth/pages/html.js"
import { messagePage } from "../../auth/pages/message.js"
import { type LoginTransaction, PendingAuthorizations } from "../../auth/pending.js"
import { Config } from "../../config/service.js"
import { securityEvent } from "../../events/security-log.js"
import type { UpstreamIdentity } from "../../identity/upstream/claims.js"
import type { UpstreamConnection } from "../../identity/upstream/connection.js"
import { proposalPath } from "../../sources/review/paths.js"
import { UserRepo } from "../../store/users.js"
import { approvalSettingsOf } from "../settings.js"
import { type StepUpPurpose, StepUps } from "../step-up.js"

/**
 * What a step-up was for, as its log lines name it and where the reviewer goes back to: a write
 * approval's review page, or a configuration change's (docs/tool-sources.md, "Configuration review").
 */
const aboutOf = (purpose: StepUpPurpose) =>
  purpose.for === "config_change"
    ? {
        event: "config.review_step_up",
        fields: { proposal_id: purpose.approvalId },
        back: `${proposalPath(purpose.approvalId)}?done=step-up`
      }
    : {
        event: "approval.step_up",
        fields: { approval_id: purpose.approvalId },
        back: `/sso/approvals/${purpose.approvalId}?done=step-up`
      }

/**
 * The identity provider's answer to a reviewer's step-up (`/sso/callback`, verified like any sign-in):
 * it counts only when the same person authenticated again just now with one of the configured `acr`
 * values. It signs nobody in and changes nothing else; the evidence lets that reviewer approve that one
 * approval in that browser sign-in, for `approvals.step_up.max_age`.
 */
export const finishStepUp = (
  transaction: LoginTransaction,
  purpose: StepUpPurpose,
  connection: UpstreamConnection,
  identity: UpstreamIdentity
) =>
  Effect.gen(function* () {
    yield* (yield* PendingAuthorizations).finish(transaction.id)
    const { config } = yield* Config
    const settings = approvalSettingsOf(config)
    const now = yield* Clock.currentTimeMillis
    const user = yield* (yield* UserRepo).findEnterprise(connection.namespace, identity.subject)
    const authTime = identity.authTime === undefined ? undefined : identity.authTime * 1000
    const reason =
      Option.isNone(user) || user.value.id !== purpose.userId
        ? "other_person"
        : identity.acr === undefined || !settings.stepUpAcrValues.includes(identity.acr)
          ? "acr_not_accepted"
          : // A time in the future (beyond a minute of clock skew) would stretch the evidence's life.
            authTime === undefined || now - authTime > settings.stepUpMaxAgeMs || authTime > now + 60_000
            ? "not_fresh"
            : undefined
    const about = aboutOf(purpose)
    if (reason !== undefined) {
      yield* securityEvent(`${about.event}_refused`, {
        ...about.fields,
        reviewer: purpose.userId,
        reason,
        acr: identity.acr ?? null
      })
      return messagePage(
        "Step-up not accepted",
        reason === "other_person"
          ? "You signed in at the identity provider as someone else. Nothing was approved."
          : "The identity provider did not confirm a fresh sign-in with the required authentication. Nothing was approved.",
        403
      )
    }
    yield* (yield* StepUps).record(purpose, identity.acr!, authTime!, settings.stepUpMaxAgeMs)
    yield* securityEvent(about.event, { ...about.fields, reviewer: purpose.userId, acr: identity.acr ?? null })
    return seeOther(about.back)
  })
