import type { Metadata } from '../customers/customer.entity.js';
import type { Organization } from './organization.entity.js';

/** The Organization object of the REST API (Tollgate's choice: the interface shows only its id). */
export interface OrganizationJson {
  readonly id: string;
  readonly name: string;
  readonly metadata: Metadata;
  readonly createdAt: string;
  readonly updatedAt: string;
}

export function presentOrganization(organization: Organization): OrganizationJson {
  return {
    id: organization.id,
    name: organization.name,
    metadata: { ...organization.metadata },
    createdAt: new Date(organization.createdAt).toISOString(),
    updatedAt: new Date(organization.updatedAt).toISOString(),
  };
}
