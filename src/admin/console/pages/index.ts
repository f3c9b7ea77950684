import type { ConsoleSection } from "../route.js"
import { approvalsSection } from "./approvals.js"
import { auditSection } from "./audit.js"
import { identitySection } from "./identity-section.js"
import { localAccountsSection } from "./local-accounts.js"
import { proposalsSection } from "./proposals.js"
import { toolSourcesSection } from "./tool-sources.js"

/**
 * Every area of the console, in navigation order. Each file of this folder exports one
 * `ConsoleSection`; the console's core mounts their routes and lists their navigation.
 */
export const consoleSections: ReadonlyArray<ConsoleSection> = [
  identitySection,
  localAccountsSection,
  toolSourcesSection,
  proposalsSection,
  approvalsSection,
  auditSection
]
