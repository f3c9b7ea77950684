import { Layer, type Redacted } from "effect"
import { authBaseLayer } from "../auth/layer.js"
import type { StorageConfig } from "../config/schema.js"
import { ConfigKey } from "../crypto/config-key.js"
import { Sealer } from "../crypto/sealer.js"
import { Signer } from "../crypto/signer.js"
import { StoreLive } from "../store/live.js"
import { SigningKeyRepo } from "../store/signing-keys.js"

/**
 * The process-wide services: the configuration key, the store (opened, checked and migrated before
 * anything else runs), the signer, and the authorization server's repositories, pending logins and
 * session check. Their settings are static, so generations share them.
 */
export const baseLayer = (storage: StorageConfig, key: Redacted.Redacted<Uint8Array>) => {
  const sealer = Sealer.Default.pipe(Layer.provideMerge(ConfigKey.layer(key)))
  const store = StoreLive(storage).pipe(Layer.provideMerge(sealer))
  const signer = Signer.Default.pipe(Layer.provideMerge(SigningKeyRepo.Default), Layer.provideMerge(store))
  return authBaseLayer.pipe(Layer.provideMerge(signer))
}
