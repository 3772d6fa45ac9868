/**
 * controlplane/kinds/serviceaccount: ServiceAccounts (core/v1): a name (a DNS subdomain) and the secrets and image
 * pull secrets it lists. Stub strategy: the name only (issue 27).
 */
import { plain } from './strategy.js';

export const serviceAccountStrategy = plain('subdomain');
