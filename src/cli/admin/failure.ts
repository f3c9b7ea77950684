import { Data } from "effect"

/**
 * Exit codes of `gateway admin …` (README, "Commands"; docs/management-api.md, "The `gateway admin`
 * commands"), so a script can tell what went wrong without reading the text: the Management API's
 * answer decides them.
 */
export const AdminExit = {
  /** The gateway did not answer, or answered something unexpected. */
  failed: 1,
  /** The command line, the configuration or the JSON given is wrong (nothing was sent). */
  usage: 2,
  /** No valid token, or its user is no administrator now (401, 403). */
  unauthorized: 3,
  /** No such record (404). */
  notFound: 4,
  /** It changed since it was read (412), or the change conflicts with the state (409). */
  conflict: 5,
  /** The API refused the request as given (400, 413, 415, 428). */
  refused: 6,
  /** Accepted for configuration review (202): printed, but nothing is in effect yet. */
  pending: 7
} as const

/** A `gateway admin` command that did not do what was asked; `exitCode` is one of `AdminExit`. */
export class AdminCommandFailed extends Data.TaggedError("AdminCommandFailed")<{
  readonly message: string
  readonly exitCode: number
}> {}

/** The exit code of an API answer's status. */
export const exitCodeOfStatus = (status: number): number => {
  if (status === 401 || status === 403) return AdminExit.unauthorized
  if (status === 404) return AdminExit.notFound
  if (status === 409 || status === 412) return AdminExit.conflict
  if (status >= 400 && status < 500) return AdminExit.refused
  return AdminExit.failed
}
