import type { Router } from 'express';
import { strictRouter } from '../../infra/strict-router.js';
import { presentOrganization } from './organization.presenter.js';
import type { OrganizationsService } from './organizations.service.js';

/** `GET /v1/organizations`: a customer's organizations (parse → OrganizationsService → presenter). */
export function organizationsRouter(organizations: OrganizationsService): Router {
  const router = strictRouter();

  router.get('/organizations', async (req, res) => {
    const list = await organizations.listOrganizations(req.principal, req.query);
    res.json({ data: list.map(presentOrganization) });
  });

  return router;
}
