import type { ConsoleSection } from "../route.js"
import { localAccountsSection } from "./local-accounts.js"

/**
 * Every area of the console, in navigation order. Each file of this folder exports one
 * `ConsoleSection`; the console's core mounts their routes and lists their navigation.
 */
export const consoleSections: ReadonlyArray<ConsoleSection> = [localAccountsSection]
