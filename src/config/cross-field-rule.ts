import type { GatewayConfig } from "./schema.js"
import type { ConfigProblem, ResolvedSecrets } from "./service.js"

/**
 * A cross-field rule: one small named check per concern. Each rule names the
 * top-level sections it reads, so when one section fails to decode the rules over the others still
 * run and every problem is reported in one pass.
 */

export type Section = keyof GatewayConfig

export interface Rule {
  readonly name: string
  readonly needs: ReadonlyArray<Section>
  readonly check: (config: Partial<GatewayConfig>, secrets: ResolvedSecrets) => ReadonlyArray<ConfigProblem>
}

const hasSections = <K extends Section>(
  config: Partial<GatewayConfig>,
  needs: ReadonlyArray<K>
): config is Partial<GatewayConfig> & Pick<GatewayConfig, K> => needs.every((name) => config[name] !== undefined)

export const rule = <K extends Section>(
  name: string,
  needs: ReadonlyArray<K>,
  check: (config: Pick<GatewayConfig, K>, secrets: ResolvedSecrets) => ReadonlyArray<ConfigProblem>
): Rule => ({ name, needs, check: (config, secrets) => (hasSections(config, needs) ? check(config, secrets) : []) })

/** `[problem]` when `message` is defined: most checks are "this one field, if wrong". */
export const when = (path: string, message: string | undefined): ReadonlyArray<ConfigProblem> =>
  message === undefined ? [] : [{ path, line: undefined, message }]
