import type { Router } from 'express';
import { strictRouter } from '../../rest/router.js';
import type { Services } from '../../services.js';
import { presentCustomer, presentCustomerList } from './customer.presenter.js';

/** `/v1/customers…`: parse → CustomersService → presenter. */
export function customersRouter(services: Services): Router {
  const router = strictRouter();

  router.get('/customers', async (req, res) => {
    const page = await services.customers.listCustomers(req.principal, req.query);
    res.json(presentCustomerList(page));
  });

  router.post('/customers', async (req, res) => {
    const customer = await services.customers.createCustomer(req.principal, req.body);
    res.status(201).json(presentCustomer(customer));
  });

  router.get('/customers/:id', async (req, res) => {
    const customer = await services.customers.getCustomer(req.principal, req.params.id);
    res.json(presentCustomer(customer));
  });

  router.patch('/customers/:id', async (req, res) => {
    const customer = await services.customers.updateCustomer(req.principal, req.params.id, req.body);
    res.json(presentCustomer(customer));
  });

  return router;
}
