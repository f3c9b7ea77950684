import type { ConsoleSection } from "../route.js"
import { groupRoutes } from "./groups.js"
import { identityRoutes } from "./identities.js"
import { identityProviderRoutes } from "./identity-providers.js"

/** Identities and access (docs/console.md): people, groups and their grants, identity providers. */
export const identitySection: ConsoleSection = {
  nav: [
    { label: "People", path: "/console/identities" },
    { label: "Groups", path: "/console/groups" },
    { label: "Identity providers", path: "/console/identity-providers" }
  ],
  routes: [...identityRoutes, ...groupRoutes, ...identityProviderRoutes]
}
