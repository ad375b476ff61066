export * from "./citizens";
export * from "./residency";
export * from "./credentials";
export * from "./gate";
export * from "./limits";
export * from "./ward";
