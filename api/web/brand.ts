/** The product's name, at the top of every page and in every title. */
export const productName = 'Svc Platform';
