import type { Router } from 'express';
import { strictRouter } from '../../infra/strict-router.js';
import type { InvitationsService } from './invitations.service.js';
import { presentInvitation, presentOrganization, presentSeats } from './organization.presenter.js';
import type { OrganizationsService } from './organizations.service.js';

/**
 * `/v1/organizations…`: a customer's organizations, an organization's seats and its invitations
 * (parse → service → presenter).
 */
export function organizationsRouter(
  organizations: OrganizationsService,
  invitations: InvitationsService,
): Router {
  const router = strictRouter();

  router.get('/organizations', async (req, res) => {
    const list = await organizations.listOrganizations(req.principal, req.query);
    res.json({ data: list.map(presentOrganization) });
  });

  router.get('/organizations/:id/seats', async (req, res) => {
    res.json(presentSeats(await organizations.getSeats(req.principal, req.params.id)));
  });

  router.post('/organizations/:id/invitations', async (req, res) => {
    const invitation = await invitations.invite(req.principal, req.params.id, req.body);
    res.status(201).json(presentInvitation(invitation, invitations.now()));
  });

  router.get('/organizations/:id/invitations', async (req, res) => {
    const list = await invitations.listInvitations(req.principal, req.params.id);
    const now = invitations.now();
    res.json({ data: list.map((invitation) => presentInvitation(invitation, now)) });
  });

  router.delete('/organizations/:id/invitations/:invitationId', async (req, res) => {
    const invitation = await invitations.revokeInvitation(
      req.principal,
      req.params.id,
      req.params.invitationId,
    );
    res.json(presentInvitation(invitation, invitations.now()));
  });

  return router;
}
