// bindings/sdk/src (plain JS, its types inferred) provides everything bindings/sdk/index.d.ts
// declares, with compatible shapes: a declared export or client method the implementation lacks is
// a type error here. `tsc --noEmit` in scripts/test; never run.
import type * as Declared from "@siteswarm/sdk";
import * as impl from "../../bindings/sdk/src/index.js";

export const delegate: typeof Declared.delegate = impl.delegate;
export const tenantHeaders: typeof Declared.tenantHeaders = impl.tenantHeaders;
export const errorResponse: typeof Declared.errorResponse = impl.errorResponse;
export const SiteSwarmError: typeof Declared.SiteSwarmError = impl.SiteSwarmError;
export const createPlatformClient: (options: Declared.PlatformClientOptions) => Declared.PlatformClient =
  impl.createPlatformClient;
export const headers: [typeof Declared.TENANT_ID_HEADER, typeof Declared.TENANT_TOKEN_HEADER, string] = [
  impl.TENANT_ID_HEADER,
  impl.TENANT_TOKEN_HEADER,
  impl.CAPABILITY_VERSION_HEADER,
];
// Every declared value export exists in the implementation.
export const everyExport: { [K in keyof typeof Declared]: unknown } = impl;
