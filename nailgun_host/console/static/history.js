// placeholder
export const routes = [];
