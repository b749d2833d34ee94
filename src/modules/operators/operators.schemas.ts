import { z } from 'zod';
import { OPERATOR_ROLES, type OperatorRole } from '../../core/principal.js';
import { idSchema } from '../../core/validation.js';
import { emailSchema } from '../customers/customers.schemas.js';

const role = z.enum(OPERATOR_ROLES as [OperatorRole, ...OperatorRole[]], {
  error: 'must be owner, admin or viewer',
});

export const addOperatorSchema = z.strictObject({ email: emailSchema, role });
export const changeOperatorRoleSchema = z.strictObject({ id: idSchema, role });
export const operatorIdSchema = idSchema;

export const operatorSignInSchema = z.strictObject({ email: emailSchema });
export const operatorTokenSchema = z.strictObject({
  token: z.string().min(1, 'must not be empty').max(512, 'is not a valid token'),
});
