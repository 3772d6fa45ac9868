/**
 * controlplane/kinds/endpoints: Endpoints (core/v1), the older form of EndpointSlices. Stub strategy: the name only,
 * until its validation lands (issue 27).
 */
import { plain } from './strategy.js';

export const endpointsStrategy = plain('subdomain');
