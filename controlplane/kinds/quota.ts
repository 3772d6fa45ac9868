/**
 * controlplane/kinds/quota: LimitRanges and ResourceQuotas (core/v1). Stub strategies: the names only, until their
 * validation lands (issue 27).
 */
import { plain } from './strategy.js';

export const limitRangeStrategy = plain('subdomain');
export const resourceQuotaStrategy = plain('subdomain');
