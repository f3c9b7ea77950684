/**
 * The configuration review's browser paths on the public listener (docs/tool-sources.md,
 * "Configuration review"). A leaf module: the sign-in and the step-up callback name these pages
 * without importing the pages themselves.
 */
export const reviewPaths = {
  /** `?role=security[&proposal=<id>]`: the `approval_url` the Management API hands out. */
  login: "/auth/login",
  list: "/auth/reviews",
  proposal: "/auth/reviews/:id",
  approve: "/auth/reviews/:id/approve",
  reject: "/auth/reviews/:id/reject",
  stepUp: "/auth/reviews/:id/step-up"
} as const

/**
 * A proposal id as it may appear in a path: URL-safe letters, digits, `_` and `-`, 1 to 64 of them.
 * The Management API chooses the ids; anything else never reaches the service.
 */
export const PROPOSAL_ID_PATTERN = "[A-Za-z0-9_-]{1,64}"
export const PROPOSAL_ID = new RegExp(`^${PROPOSAL_ID_PATTERN}$`)

/** The review page of one proposal. */
export const proposalPath = (id: string) => `${reviewPaths.list}/${id}`

/** The review pages a sign-in may come back to (`/sso?next=`): the list, or one proposal's page. */
export const REVIEW_RETURN_PATH = new RegExp(`^${reviewPaths.list}(/${PROPOSAL_ID_PATTERN})?$`)
