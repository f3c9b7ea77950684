import { groupNameProblem, visibleNameProblem } from "../../policy/group-name.js"

/**
 * Sign-in names of local accounts (docs/local-accounts.md, "Names"). They get the hygiene of
 * permission group names (src/policy/group-name.ts): no control characters, nothing invisible or
 * direction-changing, stored NFC-normalized and compared by the same key (NFC, case-folded), unique
 * among local accounts (`users.username_key`, migration 0021), so `Alice` and `alice` are one name.
 * Besides: no whitespace at all, and at most 64 characters.
 */
export const MAX_LOCAL_USERNAME = 64

/**
 * Display names: readable as group names are (at most 200 characters, nothing invisible, no edge
 * whitespace), but free in script and form — they are not unique, so there is nothing to pass for.
 */
export const MAX_DISPLAY_NAME = 200

/** What is wrong with `name` as a local account's sign-in name, or undefined when it may be used. */
export const usernameProblem = (name: string): string | undefined => {
  if (name.length === 0) return "must not be empty"
  if (name.length > MAX_LOCAL_USERNAME) return `must be at most ${MAX_LOCAL_USERNAME} characters`
  const problem = groupNameProblem(name)
  if (problem !== undefined) return problem
  if (/\s/u.test(name)) return "must not contain whitespace"
  return undefined
}

/** What is wrong with `name` as a display name, or undefined. */
export const displayNameProblem = (name: string): string | undefined => visibleNameProblem(name)
