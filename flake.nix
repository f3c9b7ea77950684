{
  description = "gateway: identity-aware gateway in front of MCP tool servers";

  # `nix build` writes flake.lock on first use; commit it so every machine builds the same closure.
  inputs.nixpkgs.url = "github:NixOS/nixpkgs/nixos-25.11";

  outputs =
    { nixpkgs, ... }:
    let
      inherit (nixpkgs) lib;
      systems = [
        "x86_64-linux"
        "aarch64-linux"
        "x86_64-darwin"
        "aarch64-darwin"
      ];
      # Node 24 everywhere, including the hooks of importNpmLock: they hand node-gyp the headers of
      # `pkgs.nodejs`, and better-sqlite3 must be compiled against the Node that loads it (same ABI).
      pkgsFor =
        system:
        import nixpkgs {
          inherit system;
          overlays = [ (_final: prev: { nodejs = prev.nodejs_24; }) ];
        };
      forAllSystems = f: lib.genAttrs systems (system: f (pkgsFor system));

      package = lib.importJSON ./package.json;

      # The lockfile is written with `omit-lockfile-registry-resolved` (no `resolved` URLs), which
      # importNpmLock needs to fetch each tarball. Registry tarball URLs follow from name and version;
      # `integrity` still pins every byte.
      tarballUrl =
        path: module:
        let
          name = module.name or (lib.last (lib.splitString "node_modules/" path));
          baseName = lib.last (lib.splitString "/" name);
        in
        "https://registry.npmjs.org/${name}/-/${baseName}-${module.version}.tgz";
      packageLock =
        let
          lock = lib.importJSON ./package-lock.json;
        in
        lock
        // {
          packages = lib.mapAttrs (
            path: module:
            if path != "" && !(module ? resolved) && module ? integrity then
              module // { resolved = tarballUrl path module; }
            else
              module
          ) lock.packages;
        };

      # Only what the build reads; flakes also see only files tracked by git.
      src = lib.fileset.toSource {
        root = ./.;
        fileset = lib.fileset.unions [
          ./package.json
          ./package-lock.json
          ./tsconfig.json
          ./scripts
          ./src
        ];
      };

      gatewayFor =
        pkgs:
        pkgs.buildNpmPackage {
          pname = "gateway";
          inherit (package) version;
          inherit src;
          nodejs = pkgs.nodejs_24;

          # No npmDepsHash: importNpmLock fetches each package by the lockfile's integrity hash.
          npmDeps = pkgs.importNpmLock {
            inherit package packageLock;
          };
          npmConfigHook = pkgs.importNpmLock.npmConfigHook;

          # The sandbox has no network: skip prebuild-install's download, compile with node-gyp.
          env.npm_config_build_from_source = "better-sqlite3";

          nativeBuildInputs = [
            pkgs.makeWrapper
            pkgs.removeReferencesTo
          ];

          # `npm run build` (the esbuild bundle, scripts/build.mjs) runs in the default build phase. Installing is done here rather
          # than by npm pack, which would drop dist/ because .gitignore lists it.
          installPhase = ''
            runHook preInstall
            npm prune --omit=dev --no-save
            # Build-time leftovers that reference the Node source tree and the npmDeps tarballs
            # would otherwise pull both into the runtime closure.
            rm -f node_modules/.package-lock.json
            addon=node_modules/better-sqlite3/build/Release/better_sqlite3.node
            mv $addon better_sqlite3.node
            rm -rf node_modules/better-sqlite3/build
            mkdir -p node_modules/better-sqlite3/build/Release
            mv better_sqlite3.node $addon
            remove-references-to -t ${pkgs.srcOnly pkgs.nodejs} $addon

            mkdir -p $out/lib/gateway $out/bin
            cp -r dist node_modules $out/lib/gateway/
            # The unpatched package.json: the working copy points at npmDeps store paths.
            cp ${src}/package.json $out/lib/gateway/package.json
            makeWrapper ${pkgs.nodejs_24}/bin/node $out/bin/gateway \
              --add-flags $out/lib/gateway/dist/main.js
            runHook postInstall
          '';

          doInstallCheck = true;
          installCheckPhase = ''
            runHook preInstallCheck
            ${pkgs.nodejs_24}/bin/node -e "new (require('$out/lib/gateway/node_modules/better-sqlite3'))(':memory:').close()"
            $out/bin/gateway --version
            runHook postInstallCheck
          '';

          meta = {
            description = package.description;
            license = lib.licenses.asl20;
            mainProgram = "gateway";
          };
        };
    in
    {
      packages = forAllSystems (pkgs: {
        gateway = gatewayFor pkgs;
        default = gatewayFor pkgs;
      });

      devShells = forAllSystems (pkgs: {
        default = pkgs.mkShell {
          packages = [
            pkgs.nodejs_24
            pkgs.python3 # node-gyp, for better-sqlite3
            pkgs.sqlite # sqlite3 CLI: inspection and online backups (docs/backup.md)
            pkgs.postgresql # psql, pg_dump; `initdb`/`pg_ctl` for a local test server
            pkgs.openldap # slapd and ldap-utils for the LDAP tests
          ];
        };
      });
    };
}
