// examples/grocery_rs.rs - a Rust program whose method is called from scoped threads (after the
// grocery example of the project's seeds): PRODUCTS products, each updated ROUNDS times by
// Product::update_product, the work split over THREADS std::thread::scope threads.
//
//   usage: grocery_rs [PRODUCTS [ROUNDS [THREADS]]]    defaults 1000, 10 and 2
//   prints: updates = PRODUCTS * ROUNDS, and a checksum
use std::env;
use std::thread;

struct Product {
    name: String,
    price: f64,
    vendor: String,
    production_site: String,
}

#[inline(never)]
fn process_name(name: &mut String) {
    let upper = name.to_uppercase();
    name.clear();
    name.push_str(&upper);
}

#[inline(never)]
fn process_price(price: &mut f64) {
    *price = (*price * 1.01 * 100.0).round() / 100.0;
}

#[inline(never)]
fn process_vendor(vendor: &mut String) {
    let v: String = vendor.chars().rev().collect();
    *vendor = v;
}

#[inline(never)]
fn process_production_site(site: &mut String) {
    let s = site.replace('a', "A");
    *site = s;
}

impl Product {
    #[inline(never)]
    fn update_product(&mut self) {
        process_name(&mut self.name);
        process_price(&mut self.price);
        process_vendor(&mut self.vendor);
        process_production_site(&mut self.production_site);
    }
}

fn arg(args: &[String], i: usize, default: usize) -> usize {
    args.get(i).map_or(default, |a| a.parse().unwrap_or_else(|_| {
        eprintln!("grocery_rs: '{}' is not a count", a);
        std::process::exit(2)
    }))
}

fn main() {
    let args: Vec<String> = env::args().collect();
    let (n, rounds, threads) = (arg(&args, 1, 1000), arg(&args, 2, 10), arg(&args, 3, 2).max(1));
    let mut products: Vec<Product> = (0..n)
        .map(|i| Product {
            name: format!("product {}", i),
            price: 1.0 + i as f64,
            vendor: format!("vendor {}", i % 7),
            production_site: format!("site {}", i % 13),
        })
        .collect();
    let chunk = (n + threads - 1) / threads.max(1);
    for _ in 0..rounds {
        thread::scope(|scope| {
            for part in products.chunks_mut(chunk.max(1)) {
                scope.spawn(move || {
                    for p in part {
                        p.update_product();
                    }
                });
            }
        });
    }
    let sum: f64 = products.iter().map(|p| p.price).sum();
    println!("updates = {}", n * rounds);
    println!("checksum = {:.2}", sum);
}
