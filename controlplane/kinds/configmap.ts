/**
 * controlplane/kinds/configmap: ConfigMaps and Secrets (core/v1). Stub strategies: the names only, until their
 * validation lands (issue 27).
 */
import { plain } from './strategy.js';

export const configMapStrategy = plain('subdomain');
export const secretStrategy = plain('subdomain');
