import type { Router } from 'express';
import { strictRouter } from '../../infra/strict-router.js';
import { presentCustomer } from './customer.presenter.js';
import type { CustomersService } from './customers.service.js';

/** `/v1/customers…`: parse → CustomersService → presenter. */
export function customersRouter(customers: CustomersService): Router {
  const router = strictRouter();

  router.get('/customers', async (req, res) => {
    res.json(await customers.presentCustomerPage(req.principal, req.query));
  });

  router.post('/customers', async (req, res) => {
    const customer = await customers.createCustomer(req.principal, req.body);
    res.status(201).json(presentCustomer(customer));
  });

  router.get('/customers/:id', async (req, res) => {
    res.json(await customers.presentCustomerById(req.principal, req.params.id));
  });

  router.patch('/customers/:id', async (req, res) => {
    const customer = await customers.updateCustomer(req.principal, req.params.id, req.body);
    res.json(presentCustomer(customer));
  });

  return router;
}
