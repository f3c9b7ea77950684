import { Effect } from "effect"
import type { SignedIn } from "../../auth/browser-session.js"
import { browserBinding, setBrowserCookie } from "../../auth/cookies.js"
import { openTransaction } from "../../auth/login/transaction.js"
import { seeOther } from "../../auth/pages/html.js"
import { messagePage } from "../../auth/pages/message.js"
import { PendingAuthorizations } from "../../auth/pending.js"
import type { AuthSettings } from "../../auth/settings.js"
import { Config } from "../../config/service.js"
import { sha256Hex } from "../../crypto/hashing.js"
import { UpstreamSignIn } from "../../identity/upstream/service.js"
import { approvalSettingsOf } from "../settings.js"
import type { StepUpFor } from "../step-up.js"

/**
 * Sends a signed-in reviewer to the OpenID Connect provider to step up for one decision — a write
 * approval or a configuration change (docs/approvals.md, "Step-up"): `prompt=login`, `max_age` and
 * `acr_values` of `approvals.step_up`, the evidence bound to this sign-in's session and to `purpose`.
 * Both review pages start it here; a sign-in through another kind of connection cannot step up.
 */
export const startStepUp = (
  settings: AuthSettings,
  signedIn: SignedIn,
  purpose: { readonly approvalId: string; readonly for?: StepUpFor }
) =>
  Effect.gen(function* () {
    const upstream = yield* UpstreamSignIn
    const connection = yield* upstream.current
    if (connection?.protocol !== "oidc" || signedIn.user.namespace !== connection.namespace) {
      return messagePage(
        "Step-up not available",
        "Step-up needs a sign-in through your organization's OpenID Connect provider; local, LDAP and OAuth2 sign-ins cannot provide it.",
        403
      )
    }
    const approvalSettings = approvalSettingsOf((yield* Config).config)
    const started = yield* Effect.either(
      upstream.start(connection, {
        acrValues: approvalSettings.stepUpAcrValues,
        maxAge: Math.max(0, Math.floor(approvalSettings.stepUpMaxAgeMs / 1000))
      })
    )
    if (started._tag === "Left") {
      return messagePage("Identity provider unavailable", "The identity provider cannot be reached right now.", 502)
    }
    const binding = yield* browserBinding(settings)
    const opened = yield* openTransaction(binding.value, undefined)
    yield* (yield* PendingAuthorizations).update({
      ...opened,
      stage: "upstream",
      upstream: started.right.attempt,
      stepUp: { ...purpose, userId: signedIn.user.id, sessionHash: sha256Hex(signedIn.token) }
    })
    const response = seeOther(started.right.url)
    return binding.isNew ? yield* setBrowserCookie(settings, binding.value)(response) : response
  })
