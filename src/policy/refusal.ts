import { Data } from "effect"

/**
 * Why a policy write was refused. The codes are part of the Management API's contract
 * (docs/management-api.md, "Errors"); the description is one sentence for a person.
 */
export type RefusalCode =
  | "invalid_request"
  | "group_permissions_required"
  | "not_found"
  | "precondition_failed"
  | "last_administrator"
  | "builtin_administrator_required"
  | "builtin_group"
  | "name_taken"
  /** Enabling a local account that has not enrolled: only its enrolment link enables it (docs/local-accounts.md). */
  | "enrolment_pending"
  /** A directory snapshot whose version does not exceed the last applied one (docs/directory.md). */
  | "stale_version"

export class PolicyRefused extends Data.TaggedError("PolicyRefused")<{
  readonly code: RefusalCode
  readonly description: string
}> {
  override get message() {
    return `${this.code}: ${this.description}`
  }
}

export const refuse = (code: RefusalCode, description: string) => new PolicyRefused({ code, description })
