//! Host bindings of the `atrium:app` contract, generated from `wit/`.

wasmtime::component::bindgen!({
    path: "../../wit",
    world: "atrium:app/platform",
    imports: { default: async | trappable },
    exports: { default: async },
    additional_derives: [PartialEq, Eq, serde::Serialize, serde::Deserialize],
});
