//! Probe: how fast do cooperative-matrix products run when their fragments come from
//! workgroup memory (no global traffic), and what do barriers and staging stores add?
use std::fmt::Write as _;
use std::time::Instant;

#[derive(Clone, Copy)]
struct Cfg {
    name: &'static str,
    /// A staged [row][k] (coopLoadT) else [k][row] (coopLoad)
    a_kc: bool,
    /// B staged [col][k] (coopLoad) else [k][col] (coopLoadT)
    b_kc: bool,
    barriers: u32,
    stores: bool,
    fm: u32,
    fn_: u32,
    sgm: u32,
    sgn: u32,
    wgs_per_sm: u32,
    pad: u32,
    coop_stores: bool,
    /// halves per staged unit (4: vec4<f16>, 8: vec4<u32> bitcast)
    unit: u32,
    permute: bool,
}

fn emit(c: &Cfg, iters: u32) -> String {
    let bm = c.sgm * c.fm * 16;
    let bn = c.sgn * c.fn_ * 16;
    let bk = 32u32;
    let threads = 32 * c.sgm * c.sgn;
    let la = if c.a_kc { bk + c.pad } else { bm + c.pad };
    let lb = if c.b_kc { bk + c.pad } else { bn + c.pad };
    let na = if c.a_kc { bm * la } else { bk * la };
    let nb = if c.b_kc { bn * lb } else { bk * lb };
    let mut w = String::new();
    let _ = writeln!(w, "enable f16;\nenable wgpu_cooperative_matrix;");
    w.push_str("@group(0) @binding(0) var<storage, read> src: array<f16>;\n@group(0) @binding(1) var<storage, read_write> c: array<f32>;\n");
    let _ = writeln!(
        w,
        "var<workgroup> sa: array<f16, {na}>;\nvar<workgroup> sb: array<f16, {nb}>;"
    );
    let _ = writeln!(
        w,
        "@compute @workgroup_size({threads})\nfn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wg: vec3<u32>) {{"
    );
    let _ = writeln!(
        w,
        "    for (var i = lid; i < {na}u; i += {threads}u) {{ sa[i] = src[i % 4096u]; }}"
    );
    let _ = writeln!(
        w,
        "    for (var i = lid; i < {nb}u; i += {threads}u) {{ sb[i] = src[(i * 7u) % 4096u]; }}"
    );
    let _ = writeln!(
        w,
        "    workgroupBarrier();\n    let sg = lid / 32u;\n    let sm = sg / {}u;\n    let sn = sg % {}u;",
        c.sgn, c.sgn
    );
    for i in 0..c.fm {
        for j in 0..c.fn_ {
            let _ = writeln!(w, "    var acc{i}_{j} = coop_mat16x16<f32, C>();");
        }
    }
    // registers "prefetched" (values from src) to stage
    let regs_a = bm * bk / c.unit / threads;
    let regs_b = bn * bk / c.unit / threads;
    if c.stores {
        for r in 0..regs_a.max(regs_b) {
            if c.unit == 4 {
                let _ = writeln!(
                    w,
                    "    let pr{r} = vec4<f16>(src[lid + {r}u], src[lid + {r}u + 1u], src[lid + 2u], src[lid + 3u]);"
                );
            } else {
                let _ = writeln!(
                    w,
                    "    let pr{r} = vec4<f16>(src[lid + {r}u], src[lid + {r}u + 1u], src[lid + 2u], src[lid + 3u]);\n    let pq{r} = vec4<f16>(src[lid + {r}u + 5u], src[lid + {r}u + 6u], src[lid + 7u], src[lid + 9u]);"
                );
            }
        }
    }
    if c.coop_stores {
        for f in 0..4 {
            let _ = writeln!(
                w,
                "    let ga{f} = coopLoadT<coop_mat16x16<f16, A>>(&src[{}u], 16u);\n    let gb{f} = coopLoadT<coop_mat16x16<f16, B>>(&src[{}u], 16u);",
                f * 256,
                1024 + f * 256
            );
        }
    }
    let _ = writeln!(w, "    for (var it = 0u; it < {iters}u; it++) {{");
    if c.coop_stores {
        for f in 0..4u32 {
            let g = 4 * 0 + f;
            let _ = writeln!(
                w,
                "        {{ let f = sg * 4u + {g}u; let at = (f / 2u) * 16u * {la}u + (f % 2u) * 16u; coopStoreT(ga{f}, &sa[at], {la}u); }}"
            );
            let _ = writeln!(
                w,
                "        {{ let f = sg * 4u + {g}u; let at = (f / 8u) * 16u * {lb}u + (f % 8u) * 16u; coopStoreT(gb{f}, &sb[at], {lb}u); }}"
            );
        }
        w.push_str("        workgroupBarrier();\n");
    }
    if c.stores {
        for (nm, regs, kc, rows, line) in [
            ("sa", regs_a, c.a_kc, bm, la),
            ("sb", regs_b, c.b_kc, bn, lb),
        ] {
            let per = if kc { bk / c.unit } else { rows / c.unit };
            for r in 0..regs {
                let q = format!("(u / {per}u)");
                let ln = if c.permute && kc {
                    format!("(({q} & ~7u) | (({q} & 1u) << 2u) | (({q} >> 1u) & 3u))")
                } else {
                    q
                };
                let _ = writeln!(
                    w,
                    "        {{ let u = lid + {}u; let s = {ln} * {line}u + (u % {per}u) * {}u;",
                    r * threads,
                    c.unit
                );
                if c.unit == 4 {
                    for (e, comp) in ["x", "y", "z", "w"].iter().enumerate() {
                        let _ = writeln!(w, "          {nm}[s + {e}u] = pr{r}.{comp};");
                    }
                } else {
                    for (e, comp) in ["x", "y", "z", "w"].iter().enumerate() {
                        let _ = writeln!(
                            w,
                            "          {nm}[s + {e}u] = pr{r}.{comp};\n          {nm}[s + {}u] = pq{r}.{comp};",
                            e + 4
                        );
                    }
                }
                w.push_str("        }\n");
            }
        }
        if c.barriers > 0 {
            w.push_str("        workgroupBarrier();\n");
        }
    }
    for kk in 0..bk / 16 {
        for f in 0..c.fm {
            let (at, ld) = if c.a_kc {
                (
                    format!("(sm * {}u + {}u) * {la}u + {}u", c.fm * 16, f * 16, kk * 16),
                    "coopLoadT",
                )
            } else {
                (
                    format!("{}u + sm * {}u + {}u", kk * 16 * la, c.fm * 16, f * 16),
                    "coopLoad",
                )
            };
            let _ = writeln!(
                w,
                "        let fa{kk}_{f} = {ld}<coop_mat16x16<f16, A>>(&sa[{at}], {la}u);"
            );
        }
        for f in 0..c.fn_ {
            let (at, ld) = if c.b_kc {
                (
                    format!(
                        "(sn * {}u + {}u) * {lb}u + {}u",
                        c.fn_ * 16,
                        f * 16,
                        kk * 16
                    ),
                    "coopLoad",
                )
            } else {
                (
                    format!("{}u + sn * {}u + {}u", kk * 16 * lb, c.fn_ * 16, f * 16),
                    "coopLoadT",
                )
            };
            let _ = writeln!(
                w,
                "        let fb{kk}_{f} = {ld}<coop_mat16x16<f16, B>>(&sb[{at}], {lb}u);"
            );
        }
        for i in 0..c.fm {
            for j in 0..c.fn_ {
                let _ = writeln!(
                    w,
                    "        acc{i}_{j} = coopMultiplyAdd(fa{kk}_{i}, fb{kk}_{j}, acc{i}_{j});"
                );
            }
        }
    }
    if c.barriers > 1 || (c.barriers == 1 && !c.stores) {
        w.push_str("        workgroupBarrier();\n");
    }
    w.push_str("    }\n    if (wg.x == 0xffffffffu) {\n");
    for i in 0..c.fm {
        for j in 0..c.fn_ {
            let _ = writeln!(
                w,
                "        coopStoreT(acc{i}_{j}, &c[{}u], 16u);",
                (i * c.fn_ + j) * 256
            );
        }
    }
    w.push_str("    }\n    if (wg.x == 0u && lid < 32u) { coopStoreT(acc0_0, &c[0], 16u); }\n}\n");
    w
}

fn main() {
    let instance = wgpu::Instance::new(wgpu::InstanceDescriptor {
        backends: wgpu::Backends::VULKAN,
        ..wgpu::InstanceDescriptor::new_without_display_handle()
    });
    let adapters = pollster::block_on(instance.enumerate_adapters(wgpu::Backends::VULKAN));
    let Some(adapter) = adapters.into_iter().find(|a| {
        a.features()
            .contains(wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX)
    }) else {
        println!("no adapter with cooperative matrices");
        for c in configs() {
            let t = emit(&c, 4);
            let module = naga::front::wgsl::parse_str(&t)
                .unwrap_or_else(|e| panic!("{}: {}\n{t}", c.name, e.emit_to_string(&t)));
            let mut v = naga::valid::Validator::new(
                naga::valid::ValidationFlags::all(),
                naga::valid::Capabilities::all(),
            );
            v.validate(&module)
                .unwrap_or_else(|e| panic!("{}: {e:?}", c.name));
            println!("{} validates ({} bytes)", c.name, t.len());
        }
        for cs in [false, true] {
            let t = mini_matmul(cs, 4096);
            let module = naga::front::wgsl::parse_str(&t)
                .unwrap_or_else(|e| panic!("mini {cs}: {}\n{t}", e.emit_to_string(&t)));
            let mut v = naga::valid::Validator::new(
                naga::valid::ValidationFlags::all(),
                naga::valid::Capabilities::all(),
            );
            v.validate(&module)
                .unwrap_or_else(|e| panic!("mini {cs}: {e:?}"));
            println!("mini matmul coop_stage={cs} validates");
        }
        return;
    };
    println!("adapter: {:?}", adapter.get_info().name);
    let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        label: None,
        required_features: wgpu::Features::SHADER_F16
            | wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX,
        required_limits: adapter.limits(),
        experimental_features: unsafe { wgpu::ExperimentalFeatures::enabled() },
        memory_hints: Default::default(),
        trace: Default::default(),
    }))
    .expect("device");
    device.on_uncaptured_error(std::sync::Arc::new(|e| println!("wgpu error: {e}")));
    let srcv: Vec<u16> = (0..8192)
        .map(|i| half::f16::from_f32(((i * 7 % 13) as f32 - 6.0) / 64.0).to_bits())
        .collect();
    use wgpu::util::DeviceExt;
    let sbuf = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: None,
        contents: bytemuck::cast_slice(&srcv),
        usage: wgpu::BufferUsages::STORAGE,
    });
    let cbuf = device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: 1 << 20,
        usage: wgpu::BufferUsages::STORAGE,
        mapped_at_creation: false,
    });
    let iters = 256u32;
    for c in configs() {
        let src = emit(&c, iters);
        let m = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: None,
            source: wgpu::ShaderSource::Wgsl(src.clone().into()),
        });
        let p = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: None,
            layout: None,
            module: &m,
            entry_point: Some("main"),
            compilation_options: Default::default(),
            cache: None,
        });
        let bg = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &p.get_bind_group_layout(0),
            entries: &[
                wgpu::BindGroupEntry {
                    binding: 0,
                    resource: sbuf.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 1,
                    resource: cbuf.as_entire_binding(),
                },
            ],
        });
        let groups = 132 * c.wgs_per_sm * 8;
        let mut times = vec![];
        for rep in 0..6 {
            let mut e = device.create_command_encoder(&Default::default());
            {
                let mut pass = e.begin_compute_pass(&Default::default());
                pass.set_pipeline(&p);
                pass.set_bind_group(0, &bg, &[]);
                for _ in 0..4 {
                    pass.dispatch_workgroups(groups, 1, 1);
                }
            }
            let t = Instant::now();
            queue.submit([e.finish()]);
            device.poll(wgpu::PollType::wait_indefinitely()).unwrap();
            if rep > 0 {
                times.push(t.elapsed().as_secs_f64() / 4.0);
            }
        }
        times.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let t = times[times.len() / 2];
        let warps = c.sgm * c.sgn;
        let flop = 2.0 * 4096.0 * (c.fm * c.fn_ * 2 * warps) as f64 * iters as f64 * groups as f64;
        println!(
            "{:<44} {:>8.1} TFLOP/s  ({:.3} ms)",
            c.name,
            flop / t / 1e12,
            t * 1e3
        );
    }
    // Call 2 ran the whole-matmul comparison too (`smem-probe mini`).
    if std::env::args().any(|a| a == "mini") {
        mini(&device, &queue);
    }
}

fn mini(device: &wgpu::Device, queue: &wgpu::Queue) {
    use wgpu::util::DeviceExt;
    let n = 4096usize;
    let mut seed = 12345u64;
    let mut rnd = || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((seed >> 40) as f32 / (1u64 << 24) as f32) - 0.5
    };
    let av: Vec<half::f16> = (0..n * n).map(|_| half::f16::from_f32(rnd())).collect();
    let bv: Vec<half::f16> = (0..n * n).map(|_| half::f16::from_f32(rnd())).collect();
    let abuf = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: None,
        contents: bytemuck::cast_slice(&av),
        usage: wgpu::BufferUsages::STORAGE,
    });
    let bbuf = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: None,
        contents: bytemuck::cast_slice(&bv),
        usage: wgpu::BufferUsages::STORAGE,
    });
    let cbuf = device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: (n * n * 4) as u64,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let rb = device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: (n * n * 4) as u64,
        usage: wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::MAP_READ,
        mapped_at_creation: false,
    });
    for cs in [false, true, false, true] {
        let src = mini_matmul(cs, n as u32);
        let m = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: None,
            source: wgpu::ShaderSource::Wgsl(src.into()),
        });
        let p = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: None,
            layout: None,
            module: &m,
            entry_point: Some("main"),
            compilation_options: Default::default(),
            cache: None,
        });
        let bg = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &p.get_bind_group_layout(0),
            entries: &[
                wgpu::BindGroupEntry {
                    binding: 0,
                    resource: abuf.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 1,
                    resource: bbuf.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 2,
                    resource: cbuf.as_entire_binding(),
                },
            ],
        });
        let mut times = vec![];
        for rep in 0..8 {
            let mut e = device.create_command_encoder(&Default::default());
            {
                let mut pass = e.begin_compute_pass(&Default::default());
                pass.set_pipeline(&p);
                pass.set_bind_group(0, &bg, &[]);
                for _ in 0..20 {
                    pass.dispatch_workgroups((n / 128) as u32, (n / 128) as u32, 1);
                }
            }
            let t = Instant::now();
            queue.submit([e.finish()]);
            device.poll(wgpu::PollType::wait_indefinitely()).unwrap();
            if rep > 1 {
                times.push(t.elapsed().as_secs_f64() / 20.0);
            }
        }
        times.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let t = times[times.len() / 2];
        // check sampled entries
        let mut e = device.create_command_encoder(&Default::default());
        e.copy_buffer_to_buffer(&cbuf, 0, &rb, 0, (n * n * 4) as u64);
        queue.submit([e.finish()]);
        let slice = rb.slice(..);
        slice.map_async(wgpu::MapMode::Read, |_| {});
        device.poll(wgpu::PollType::wait_indefinitely()).unwrap();
        let got: Vec<f32> = bytemuck::cast_slice(&slice.get_mapped_range().unwrap()).to_vec();
        rb.unmap();
        let mut maxerr = 0f64;
        for s in 0..200 {
            let (i, j) = ((s * 977 + 13) % n, (s * 1231 + 7) % n);
            let mut r = 0f64;
            for k in 0..n {
                r += av[i * n + k].to_f64() * bv[k * n + j].to_f64();
            }
            maxerr = maxerr.max((r - got[i * n + j] as f64).abs());
        }
        let flop = 2.0 * (n as f64).powi(3);
        println!(
            "mini matmul 4096^3 coop_stage={cs}: {:.1} TFLOP/s ({:.4} ms), max |err| over 200 samples {maxerr:.2e}",
            flop / t / 1e12,
            t * 1e3
        );
    }
}

fn configs() -> Vec<Cfg> {
    let base = Cfg {
        name: "",
        a_kc: true,
        b_kc: false,
        barriers: 0,
        stores: false,
        fm: 4,
        fn_: 4,
        sgm: 2,
        sgn: 2,
        wgs_per_sm: 2,
        pad: 8,
        coop_stores: false,
        unit: 4,
        permute: false,
    };
    vec![
        Cfg {
            name: "NN loads only (A loadT, B loadT)",
            ..base
        },
        Cfg {
            name: "NT loads only (A loadT, B load)",
            b_kc: true,
            ..base
        },
        Cfg {
            name: "TN loads only (A load, B loadT)",
            a_kc: false,
            ..base
        },
        Cfg {
            name: "TT loads only (A load, B load)",
            a_kc: false,
            b_kc: true,
            ..base
        },
        Cfg {
            name: "NN + 1 barrier/k32",
            barriers: 1,
            ..base
        },
        Cfg {
            name: "NN + stores + 2 barriers/k32",
            barriers: 2,
            stores: true,
            ..base
        },
        Cfg {
            name: "NT + stores + 2 barriers/k32",
            b_kc: true,
            barriers: 2,
            stores: true,
            ..base
        },
        Cfg {
            name: "NN loads only, pad 0",
            pad: 0,
            ..base
        },
        Cfg {
            name: "NN loads only, pad 16",
            pad: 16,
            ..base
        },
        Cfg {
            name: "NN loads only, 8 WG/SM dispatch",
            wgs_per_sm: 8,
            ..base
        },
        Cfg {
            name: "NN loads only, 4x2 subgroups 2x4 frags",
            sgm: 4,
            sgn: 2,
            fm: 2,
            ..base
        },
        Cfg {
            name: "NN + stores + 2 barriers, 2x4 sg",
            sgn: 4,
            barriers: 2,
            stores: true,
            ..base
        },
        Cfg {
            name: "NN + stores permuted + 2 barriers",
            barriers: 2,
            stores: true,
            permute: true,
            ..base
        },
        Cfg {
            name: "NN + 8-half stores + 2 barriers",
            barriers: 2,
            stores: true,
            unit: 8,
            ..base
        },
        Cfg {
            name: "NN + 8-half stores permuted + 2 barriers",
            barriers: 2,
            stores: true,
            unit: 8,
            permute: true,
            ..base
        },
        Cfg {
            name: "NT + stores permuted + 2 barriers",
            b_kc: true,
            barriers: 2,
            stores: true,
            permute: true,
            ..base
        },
        Cfg {
            name: "NT + 8-half stores permuted + 2 barriers",
            b_kc: true,
            barriers: 2,
            stores: true,
            unit: 8,
            permute: true,
            ..base
        },
        Cfg {
            name: "NN + coopStoreT staging + 2 barriers",
            barriers: 2,
            coop_stores: true,
            ..base
        },
    ]
}

/// A whole 128x128x32 NN matmul (A [m][k], B [k][n] f16, C f32), 2x2 subgroups of 4x4
/// fragments, one staging buffer; `coop_stage`: the next tile is fetched from global
/// memory as cooperative matrices and staged with coopStoreT, else as vec4<f16> with
/// four scalar stores (permuted lines as tang does).
pub fn mini_matmul(coop_stage: bool, n: u32) -> String {
    let mut w = String::new();
    w.push_str("enable f16;\nenable wgpu_cooperative_matrix;\n");
    if coop_stage {
        w.push_str("@group(0) @binding(0) var<storage, read> a: array<f16>;\n@group(0) @binding(1) var<storage, read> b: array<f16>;\n");
    } else {
        w.push_str("@group(0) @binding(0) var<storage, read> a: array<vec4<f16>>;\n@group(0) @binding(1) var<storage, read> b: array<vec4<f16>>;\n");
    }
    w.push_str("@group(0) @binding(2) var<storage, read_write> c: array<f32>;\n");
    w.push_str("var<workgroup> sa: array<f16, 5120>;\nvar<workgroup> sb: array<f16, 4352>;\n");
    let _ = writeln!(w, "const N: u32 = {n}u;");
    w.push_str("@compute @workgroup_size(128)\nfn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wg: vec3<u32>) {\n");
    w.push_str("    let m0 = wg.y * 128u;\n    let n0 = wg.x * 128u;\n    let sg = lid / 32u;\n    let sm = sg / 2u;\n    let sn = sg % 2u;\n");
    for i in 0..4 {
        for j in 0..4 {
            let _ = writeln!(w, "    var acc{i}_{j} = coop_mat16x16<f32, C>();");
        }
    }
    // Staging plan. A tile: 128 rows x 32 k = 8 x 2 fragments; warp sg takes rows 32 sg.. (2 row frags x 2 k frags).
    // B tile: 32 k x 128 cols = 2 x 8 fragments; warp sg takes cols 32 sg.. (2 k frags x 2 col frags).
    if coop_stage {
        for f in 0..4 {
            let _ = writeln!(
                w,
                "    var ga{f}: coop_mat16x16<f16, A>;\n    var gb{f}: coop_mat16x16<f16, B>;"
            );
        }
        let fetch = |w: &mut String, k0: &str| {
            for f in 0..4u32 {
                let (r, kq) = (f / 2, f % 2);
                let _ = writeln!(
                    w,
                    "        ga{f} = coopLoadT<coop_mat16x16<f16, A>>(&a[(m0 + sg * 32u + {}u) * N + {k0} + {}u], N);",
                    r * 16,
                    kq * 16
                );
                let (kq, cq) = (f / 2, f % 2);
                let _ = writeln!(
                    w,
                    "        gb{f} = coopLoadT<coop_mat16x16<f16, B>>(&b[({k0} + {}u) * N + n0 + sg * 32u + {}u], N);",
                    kq * 16,
                    cq * 16
                );
            }
        };
        w.push_str("    {\n");
        fetch(&mut w, "0u");
        w.push_str("    }\n    var k0 = 0u;\n    loop {\n");
        for f in 0..4u32 {
            let (r, kq) = (f / 2, f % 2);
            let _ = writeln!(
                w,
                "        {{ let at = (sg * 32u + {}u) * 40u + {}u; coopStoreT(ga{f}, &sa[at], 40u); }}",
                r * 16,
                kq * 16
            );
            let (kq, cq) = (f / 2, f % 2);
            let _ = writeln!(
                w,
                "        {{ let at = {}u * 136u + sg * 32u + {}u; coopStoreT(gb{f}, &sb[at], 136u); }}",
                kq * 16,
                cq * 16
            );
        }
        // Cooperative loads must sit in uniform control flow: the last tile is fetched
        // twice rather than under a branch.
        w.push_str(
            "        workgroupBarrier();\n        k0 += 32u;\n        let kf = min(k0, N - 32u);\n",
        );
        fetch(&mut w, "kf");
    } else {
        for r in 0..8 {
            let _ = writeln!(w, "    var pa{r}: vec4<f16>;\n    var pb{r}: vec4<f16>;");
        }
        let fetch = |w: &mut String, k0: &str| {
            for r in 0..8u32 {
                // A: unit u = lid + 128 r; line (permuted) row, 8 units per line
                let _ = writeln!(
                    w,
                    "        {{ let u = lid + {}u; let q = u / 8u; let row = (q & ~7u) | ((q & 1u) << 2u) | ((q >> 1u) & 3u); pa{r} = a[((m0 + row) * N + {k0} + (u % 8u) * 4u) >> 2u]; }}",
                    r * 128
                );
                // B: [k][n]: 32 units per line
                let _ = writeln!(
                    w,
                    "        {{ let u = lid + {}u; pb{r} = b[(({k0} + u / 32u) * N + n0 + (u % 32u) * 4u) >> 2u]; }}",
                    r * 128
                );
            }
        };
        w.push_str("    {\n");
        fetch(&mut w, "0u");
        w.push_str("    }\n    var k0 = 0u;\n    loop {\n");
        for r in 0..8u32 {
            let _ = writeln!(
                w,
                "        {{ let u = lid + {}u; let q = u / 8u; let row = (q & ~7u) | ((q & 1u) << 2u) | ((q >> 1u) & 3u); let s = row * 40u + (u % 8u) * 4u;",
                r * 128
            );
            for (e, comp) in ["x", "y", "z", "w"].iter().enumerate() {
                let _ = writeln!(w, "          sa[s + {e}u] = pa{r}.{comp};");
            }
            let _ = writeln!(
                w,
                "        }}\n        {{ let u = lid + {}u; let s = (u / 32u) * 136u + (u % 32u) * 4u;",
                r * 128
            );
            for (e, comp) in ["x", "y", "z", "w"].iter().enumerate() {
                let _ = writeln!(w, "          sb[s + {e}u] = pb{r}.{comp};");
            }
            w.push_str("        }\n");
        }
        w.push_str("        workgroupBarrier();\n        k0 += 32u;\n        if (k0 < N) {\n");
        fetch(&mut w, "k0");
        w.push_str("        }\n");
    }
    for kk in 0..2u32 {
        for f in 0..4u32 {
            let _ = writeln!(
                w,
                "        let fa{kk}_{f} = coopLoadT<coop_mat16x16<f16, A>>(&sa[(sm * 64u + {}u) * 40u + {}u], 40u);",
                f * 16,
                kk * 16
            );
            let _ = writeln!(
                w,
                "        let fb{kk}_{f} = coopLoadT<coop_mat16x16<f16, B>>(&sb[{}u + sn * 64u + {}u], 136u);",
                kk * 16 * 136,
                f * 16
            );
        }
        for i in 0..4 {
            for j in 0..4 {
                let _ = writeln!(
                    w,
                    "        acc{i}_{j} = coopMultiplyAdd(fa{kk}_{i}, fb{kk}_{j}, acc{i}_{j});"
                );
            }
        }
    }
    w.push_str("        workgroupBarrier();\n        if (k0 >= N) { break; }\n    }\n");
    for i in 0..4 {
        for j in 0..4 {
            let _ = writeln!(
                w,
                "    {{ let at = (m0 + sm * 64u + {}u) * N + n0 + sn * 64u + {}u; coopStoreT(acc{i}_{j}, &c[at], N); }}",
                i * 16,
                j * 16
            );
        }
    }
    w.push_str("}\n");
    w
}
