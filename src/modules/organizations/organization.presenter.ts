import type { OrgRole } from '../../core/principal.js';
import type { Metadata } from '../customers/customer.entity.js';
import type { OrganizationInvitation } from './invitation.entity.js';
import type { Organization, OrganizationMember } from './organization.entity.js';
import type { SeatUsage } from './seats.js';

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

/** The `data` of `organization.member_added` and `organization.member_removed`. */
export function presentMembershipEvent(member: OrganizationMember) {
  return {
    organizationId: member.organization.id,
    customerId: member.customer.id,
    role: member.role,
  };
}

/** The Invitation object of `/v1/organizations/:id/invitations` (and `organization.invitation_created`). */
export interface InvitationJson {
  readonly id: string;
  readonly email: string;
  readonly role: OrgRole;
  readonly status: 'pending' | 'accepted' | 'revoked' | 'expired';
  readonly expiresAt: string;
  readonly createdAt: string;
}

/** A pending invitation past its expiry reads as `expired` (and no longer holds a seat). */
export function invitationStatus(invitation: OrganizationInvitation, now: Date): InvitationJson['status'] {
  return invitation.state === 'pending' && invitation.expiresAt.getTime() <= now.getTime()
    ? 'expired'
    : invitation.state;
}

export function presentInvitation(invitation: OrganizationInvitation, now: Date): InvitationJson {
  return {
    id: invitation.id,
    email: invitation.email,
    role: invitation.role,
    status: invitationStatus(invitation, now),
    expiresAt: new Date(invitation.expiresAt).toISOString(),
    createdAt: new Date(invitation.createdAt).toISOString(),
  };
}

/** `GET /v1/organizations/:id/seats`. */
export function presentSeats(seats: SeatUsage) {
  return {
    used: seats.used,
    members: seats.members,
    pending: seats.pending,
    limit: seats.limit,
    quantity: seats.quantity,
    overLimit: seats.overLimit,
  };
}
