// @siteswarm/sdk — what a client app needs to talk to the SiteSwarm platform workers.
export {
  CAPABILITY_VERSION_HEADER,
  delegate,
  TENANT_ID_HEADER,
  TENANT_TOKEN_HEADER,
  tenantHeaders,
} from "./delegate.js";
export { errorResponse, SiteSwarmError } from "./errors.js";
export { createPlatformClient } from "./client.js";
export { validZone } from "./hours.js";
