import { z } from 'zod';

export const featureSchema = z
  .string()
  .min(1, 'must not be empty')
  .max(200, 'must be at most 200 characters');
