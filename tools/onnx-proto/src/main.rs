//! Generates prost types from ONNX's `onnx.proto` with `protox` (a pure-Rust
//! protobuf compiler), so regenerating needs no `protoc` on the machine.
//! Usage: onnx-proto-gen PROTO_DIR OUT_DIR (see tools/onnx-proto.sh).

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let [_, proto_dir, out_dir] = args.as_slice() else {
        return Err("usage: onnx-proto-gen PROTO_DIR OUT_DIR".into());
    };
    let descriptors = protox::compile([format!("{proto_dir}/onnx.proto")], [proto_dir])?;
    prost_build::Config::new()
        .out_dir(out_dir)
        .compile_fds(descriptors)?;
    Ok(())
}
