import { commandGroup } from "../command-group.js"
import { directoryCommand } from "./directory.js"
import {
  backendsCommand,
  httpToolsCommand,
  openApiImportsCommand,
  proposalsCommand,
  toolGroupsCommand
} from "./sources.js"
import { usersCommand } from "./users.js"

/**
 * `gateway admin <kind> <action>` (docs/management-api.md, "The `gateway admin` commands"): the
 * Management API from the command line, one subcommand per kind of record. Each signs in as
 * `gateway admin-login` does (or takes `GATEWAY_ADMIN_TOKEN`), takes and prints JSON, and exits with a
 * code a script can test (src/cli/admin/failure.ts). A new kind is one file beside this one, added here.
 */
export const adminCommand = commandGroup(
  "admin",
  "The Management API from the command line: gateway admin <kind> <action>",
  [
    usersCommand,
    directoryCommand,
    backendsCommand,
    httpToolsCommand,
    openApiImportsCommand,
    toolGroupsCommand,
    proposalsCommand
  ]
)
