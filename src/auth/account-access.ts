import type { UserRow } from "../store/users.js"

/**
 * Whether a person may sign in and be issued anything (docs/authorization-server.md; docs/directory.md):
 * enabled locally AND active in the directory. Both must permit; neither can stand in for the other.
 * Every sign-in, browser session, code redemption and refresh asks this one question.
 */
export const accountUsable = (user: Pick<UserRow, "status" | "directory_active">): boolean =>
  user.status === "enabled" && user.directory_active
