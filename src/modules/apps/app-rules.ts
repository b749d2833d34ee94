import { ForbiddenError } from '../../core/errors.js';

/**
 * Organizations (B2B) are an app setting: every use of them — managing them, buying for one, asking about
 * one's subscription — is refused the same way when the app has not enabled them.
 */
export function assertOrganizationsEnabled(app: { readonly organizationsEnabled: boolean } | null): void {
  if (!app?.organizationsEnabled) throw new ForbiddenError('Organizations are not enabled for this app');
}
